package nsbench

import (
	"os"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
)

// A run with the client, tw's relay and the server on three machines
// reached over SSH: tw (and Pure SSH as the control) with iperf3-1,
// TCP_RR and scp, one sample each, tw's relay daemons' peak memory read
// on the relay's machine, and nothing left on any machine. Each machine
// has a /tmp of its own, so every file tw's client, server and relay read
// (the run's CA and the relay's leaf, tw's configurations, the exported
// user context, Caddy's, Xray's and sshd's files, the relay's login)
// reached it through its role. tw, Caddy and Xray are looked up here and
// started at the same paths on the machines, which share this filesystem
// but /tmp and /run.
func TestRunTWAcrossHosts(t *testing.T) {
	tw, caddy, xray := twAcrossHosts(t)
	lab := remotetest.New(t, 3)
	o := Quick()
	o.Transports = []string{"tw", "ssh"}
	o.Runs, o.Duration, o.Warmup, o.WAN = 1, time.Second, 0, []string{"off"}
	o.Congestion = "host" // a machine's namespace cannot extend the host's allowed list
	o.OutDir = t.TempDir()
	o.Hosts = labHostsAt(t, lab, 50, "client", "relay", "server")
	instruments := []string{"iperf3-1", "tcp_rr", "scp"}
	res := runAcross(t, o, map[string]string{"tw": tw, "caddy": caddy, "xray": xray}, instruments)
	checkOneSampleEach(t, res, o.Transports, instruments)
	for _, s := range res.Doc.Samples {
		if s.Transport == "tw" && s.Instrument == "iperf3-1" {
			for _, r := range []string{"client", "relay", "server"} {
				if s.RoleCPUSec[r] <= 0 {
					t.Errorf("tw iperf3-1: %s CPU-s %.3f, want > 0 (every byte crosses the relay)", r, s.RoleCPUSec[r])
				}
			}
		}
	}
	var peaks map[string]int64
	for _, r := range res.Doc.RSS {
		if r.Transport == "tw" && r.Label == "" {
			peaks = r.PeakKB
		}
	}
	for _, key := range []string{"relay / caddy", "relay / xray", "relay / sshd", "client / tw client connect", "server / tw server start"} {
		if peaks[key] <= 0 {
			t.Errorf("tw: peak RSS of %q is %d, want it read on its machine (all: %v)", key, peaks[key], peaks)
		}
	}
	checkNothingLeft(t, lab, res.Prefix)
}

// twAcrossHosts skips t, saying why, without root, in -short or without
// tw's binaries; else it returns their paths.
func twAcrossHosts(t *testing.T) (tw, caddy, xray string) {
	nstest.RequireRoot(t)
	tw, caddy, xray = os.Getenv("TWNSBENCH_TW"), os.Getenv("TWNSBENCH_CADDY"), os.Getenv("TWNSBENCH_XRAY")
	if tw == "" || caddy == "" || xray == "" {
		t.Skip("SKIPPED tw across hosts: set TWNSBENCH_TW, TWNSBENCH_CADDY and TWNSBENCH_XRAY to the binaries' paths " +
			"(tw: build it from Tunnel Whisperer's source; Caddy and Xray: scripts/install-relay-tools.sh DIR)")
	}
	if testing.Short() {
		t.Skip("integration test (skipped by -short)")
	}
	return tw, caddy, xray
}

// The reference's whole table across three machines:
// Pure SSH, WireGuard (wireguard-go here) and tw × LAN and the reference's
// WAN (30 ms, 0.1 %, each role's egress impaired on its own machine) ×
// iperf3-1, iperf3-4, tcp_rr and scp, with no failed sample, every WAN
// cell verified, and nothing left on any machine. A measurement, minutes
// long: only with TWNSB_MEASURE=1 and tw's binaries.
func TestReferenceTableAcrossHosts(t *testing.T) {
	if os.Getenv("TWNSB_MEASURE") == "" {
		t.Skip("SKIPPED a measurement of minutes: set TWNSB_MEASURE=1 (and tw's binaries) to run it")
	}
	tw, caddy, xray := twAcrossHosts(t)
	lab := remotetest.New(t, 3)
	o := Quick()
	o.Transports = []string{"ssh", "wireguard-go", "tw"}
	o.Runs, o.Duration, o.Warmup, o.WAN = 1, 3*time.Second, 0, []string{"30ms:0.1%"}
	o.Network.NIC = NICReference // an impairment needs real packets, as on one host
	o.Congestion = "host"
	o.OutDir = t.TempDir()
	o.Hosts = labHostsAt(t, lab, 70, "client", "relay", "server")
	instruments := []string{"iperf3-1", "iperf3-4", "tcp_rr", "scp"}
	t0 := time.Now()
	res := runAcross(t, o, map[string]string{"tw": tw, "caddy": caddy, "xray": xray}, instruments)
	t.Logf("the reference table across 3 machines in %.0f s", time.Since(t0).Seconds())
	if len(res.Doc.Failures) > 0 || len(res.Doc.Skipped) > 0 {
		t.Errorf("failures %+v, skipped %+v; want none", res.Doc.Failures, res.Doc.Skipped)
	}
	got := map[string]float64{}
	for _, s := range res.Doc.Samples {
		got[s.Transport+"/"+s.Condition+"/"+s.Instrument] = s.Value
	}
	for _, tr := range o.Transports {
		for _, cond := range []string{"lan", "wan"} {
			for _, in := range instruments {
				k := tr + "/" + cond + "/" + in
				if got[k] <= 0 {
					t.Errorf("%s: no sample", k)
				}
				t.Logf("%s: %.4g", k, got[k])
			}
		}
	}
	for _, v := range res.Doc.Verification {
		if ok, chance := nstest.WANVerified(v); !ok {
			t.Errorf("WAN cell not verified: %+v", v)
		} else if chance != "" {
			t.Log(chance)
		}
	}
	checkNothingLeft(t, lab, res.Prefix)
}
