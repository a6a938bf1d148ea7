package instrument

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// TestSizeSweepsOnPlainPath runs the three sweeps, two sizes each for 1 s,
// against netserver and an iperf3 server on a plain path in a scratch
// namespace (about 7 s): every point is measured, and the MSS shows in
// the goodput — 88-byte segments carry 1460-byte ones' bytes in 17 times
// the packets (a -M that reached no socket would leave the two alike;
// seen here: 0.28 against 3.99 Gbit/s). The namespace's traffic between
// its own addresses runs on lo, whose segmentation offloads are turned
// off as the topology turns off the veths': with them on, lo carries 64
// KiB super-segments whatever the MSS (4.3 against 6.9 Gbit/s).
func TestSizeSweepsOnPlainPath(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("integration test: needs root and not -short")
	}
	for _, bin := range []string{"ip", "ethtool", "netperf", "netserver", "iperf3"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("no %s", bin)
		}
	}
	ns, ip := scratchNetns(t, "sz", "10.254.8")
	if out, err := exec.Command("ip", "netns", "exec", ns, "ethtool", "-K", "lo", "tso", "off", "gso", "off").CombinedOutput(); err != nil {
		t.Fatalf("ethtool -K lo tso off gso off: %v: %s", err, out)
	}
	ip("netns", "exec", ns, "netserver", "-p", strconv.Itoa(transport.NetperfPort))
	iperf := exec.Command("ip", "netns", "exec", ns, "iperf3", "-s", "-p", strconv.Itoa(transport.IPerf3Port))
	if err := iperf.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = iperf.Process.Kill(); _ = iperf.Wait() })

	run := runIn(ns)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := &Job{Target: transport.DirectTarget("10.254.8.1"), Duration: time.Second, Run: run}
	// The iperf3 server is ready when it answers a test: a bounded wait.
	for deadline := time.Now().Add(5 * time.Second); ; {
		err := Answers(ctx, job, transport.ServiceIPerf3)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("iperf3 server in %s: %v", ns, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := Answers(ctx, job, transport.ServiceNetperf); err != nil {
		t.Fatalf("netserver in %s: %v", ns, err)
	}

	for _, tc := range []struct {
		in   Instrument
		keys []string
	}{
		{RRSizes{Sizes: []int{64, 16384}}, []string{"tps_64", "tps_16384", "p99_us_16384"}},
		{UDPSizes{Sizes: []int{64, 1472}}, []string{"mbps_64", "mbps_1472", "loss_pct_1472"}},
		{MSSSweep{Sizes: []int{88, 1460}}, []string{"gbps_88", "gbps_1460"}},
	} {
		m, err := MeasureBounded(ctx, tc.in, job)
		if err != nil {
			t.Fatalf("%s: %v", tc.in.Name(), err)
		}
		t.Logf("%s: value %.4g %s, points %v", tc.in.Name(), m.Value, m.Unit, m.Extra)
		for _, k := range tc.keys {
			if _, ok := m.Extra[k]; !ok {
				t.Errorf("%s: no %s", tc.in.Name(), k)
			}
		}
		if m.Value <= 0 || m.WallSec < 2 {
			t.Errorf("%s: value %g over %g s, want a rate over two 1 s runs", tc.in.Name(), m.Value, m.WallSec)
		}
		if mss, ok := tc.in.(MSSSweep); ok {
			small, big := m.Extra["gbps_88"], m.Extra["gbps_1460"]
			if !(small < big/2) {
				t.Errorf("%v: %g Gbit/s at MSS 88, %g at 1460: the MSS did not reach the sockets", mss.Sizes, small, big)
			}
		}
	}
}
