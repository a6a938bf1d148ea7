package instrument

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// replay is a Job whose Run returns captured tool output instead of
// running the tool, recording the command it was asked to run.
func replay(t *testing.T, stdoutFile string, exitCode int) (*Job, *[]string) {
	t.Helper()
	var out []byte
	if stdoutFile != "" {
		var err error
		if out, err = os.ReadFile("testdata/" + stdoutFile); err != nil {
			t.Fatal(err)
		}
	}
	return replayOutput(out, exitCode)
}

// replayOutput is replay of output given in full.
func replayOutput(out []byte, exitCode int) (*Job, *[]string) {
	var argv []string
	env := &Job{
		Target:   transport.DirectTarget("10.77.0.4"),
		Duration: 10 * time.Second,
		Run: func(_ context.Context, name string, args ...string) (proc.Result, error) {
			argv = append([]string{name}, args...)
			var err error
			if exitCode != 0 {
				err = exec.Command("sh", "-c", "exit "+itoa(exitCode)).Run()
			}
			return proc.Result{Stdout: out, Wall: 2 * time.Second}, err
		},
	}
	return env, &argv
}

func TestIPerf3Measure(t *testing.T) {
	env, argv := replay(t, "iperf3-tcp-p4-reverse.json", 0)
	m, err := IPerf3{Streams: 4}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"iperf3", "-c", "10.77.0.4", "-p", "5201", "-R", "-t", "10", "-P", "4", "-J"}
	if !reflect.DeepEqual(*argv, want) {
		t.Errorf("argv = %q\nwant   %q", *argv, want)
	}
	if m.Unit != "Gbit/s" || m.Value <= 0 || m.WallSec != 2 {
		t.Errorf("measurement %+v", m)
	}
	// Per-interval throughput in Gbit/s: the capture's one 1 s interval.
	if len(m.Series) != 1 || m.Series[0].Key != "throughput" || m.Series[0].Unit != "Gbit/s" ||
		len(m.Series[0].T) != 1 || m.Series[0].T[0] != 1 || m.Series[0].V[0] != 17.4724 {
		t.Errorf("series %+v", m.Series)
	}
	env, _ = replay(t, "iperf3-error-refused.json", 0) // iperf3 -J exits 0 on errors
	if _, err := (IPerf3{Streams: 1}).Measure(context.Background(), env); err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("refused: %v", err)
	}
}

// A tool that ran to its end and reported 0 — iperf3 0 bit/s, 0 packets/s
// received, netperf 0 transactions/s — gives a failed sample with the
// tool's own figures, never a 0 measurement. The outputs are real
// captures with their figures set to 0 (what a path that carried nothing
// makes the tools print).
func TestZeroReadingIsAFailedSample(t *testing.T) {
	zeroJSON := func(file string, zero func(end map[string]any)) []byte {
		t.Helper()
		b, err := os.ReadFile("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		zero(doc["end"].(map[string]any))
		out, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	tcp := zeroJSON("iperf3-tcp-p1-reverse.json", func(end map[string]any) {
		r := end["sum_received"].(map[string]any)
		r["bytes"], r["bits_per_second"] = 0, 0
	})
	udp := zeroJSON("iperf3-udp-reverse.json", func(end map[string]any) {
		r := end["sum_received"].(map[string]any)
		r["packets"], r["lost_packets"], r["bytes"], r["bits_per_second"] = 0, 0, 0, 0
	})
	for _, c := range []struct {
		in   Instrument
		out  []byte
		want string
	}{
		{IPerf3{Streams: 1}, tcp, "iperf3 reported 0 bit/s: the client received 0 bytes in 1.0 s"},
		{UDPRate{}, udp, "iperf3 udp reported 0 packets/s received: 136330 sent, 0 received"},
		{TCPRR{}, []byte("0.00,0.00,0,0\n"), "netperf TCP_RR reported 0 transactions/s"},
	} {
		env, _ := replayOutput(c.out, 0)
		m, err := c.in.Measure(context.Background(), env)
		if !errors.Is(err, ErrNothingMeasured) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: measurement %+v, error %v: want a failed sample saying %q", c.in.Name(), m, err, c.want)
		}
	}
}

func TestTCPRRMeasure(t *testing.T) {
	env, argv := replay(t, "netperf-rr-p0.txt", 0)
	m, err := TCPRR{}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(*argv, " "); got != "netperf -H 10.77.0.4 -p 12865 -t TCP_RR -l 10 -P 0 -- -r 64,64 -P 12867,12866 -o THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY" {
		t.Errorf("argv = %s", got)
	}
	if m.Value <= 0 || m.P50Us == nil || m.P99Us == nil || *m.P99Us < *m.P50Us {
		t.Errorf("measurement %+v", m)
	}
	env, _ = replay(t, "netperf-rr-refused.txt", 255)
	if _, err := (TCPRR{}).Measure(context.Background(), env); err == nil || !strings.Contains(err.Error(), "netserver") {
		t.Errorf("refused: %v", err)
	}
}

func TestScpMeasureAndForms(t *testing.T) {
	env, argv := replay(t, "", 0)
	env.SSH = SSHClient{User: "bench", KeyPath: "/k", Form: FormSCP}
	env.Payload, env.PayloadBytes = "/p/payload.bin", 500_000_000
	m, err := Scp{}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if m.Value != 250 || *m.PayloadBytes != 500_000_000 {
		t.Errorf("500 MB in 2 s = %v MB/s, payload %v", m.Value, *m.PayloadBytes)
	}
	got := strings.Join(*argv, " ")
	if !strings.HasPrefix(got, "scp -c aes128-gcm@openssh.com -o Compression=no") || !strings.HasSuffix(got, "-i /k -P 22 bench@10.77.0.4:/p/payload.bin /dev/null") {
		t.Errorf("argv = %s", got)
	}
	legacy := CopyCommand(SSHClient{User: "bench", KeyPath: "/k", Form: FormSCPLegacy}, env.Target, "/f")
	if legacy[0] != "scp" || legacy[1] != "-O" {
		t.Errorf("legacy form: %q", legacy)
	}
	cat := strings.Join(CopyCommand(SSHClient{User: "bench", KeyPath: "/k", Form: FormSSHCat}, env.Target, "/f'x"), " ")
	if !strings.HasPrefix(cat, "ssh ") || !strings.HasSuffix(cat, `-p 22 bench@10.77.0.4 cat '/f'\''x' > /dev/null`) {
		t.Errorf("ssh cat form: %s", cat)
	}
}

func TestPingMeasure(t *testing.T) {
	env, argv := replay(t, "ping-loopback.txt", 0)
	m, err := Ping{}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(*argv, " "); got != "ping -q -n -c 200 -i 0.01 -W 2 10.77.0.4" {
		t.Errorf("argv = %s", got)
	}
	if m.Value != 0.056 || m.Extra["min_ms"] != 0.039 || m.Extra["max_ms"] != 0.114 || m.Extra["loss_pct"] != 0 {
		t.Errorf("measurement %+v", m)
	}
	env, _ = replay(t, "ping-loss100.txt", 1)
	if _, err := (Ping{}).Measure(context.Background(), env); err == nil || !strings.Contains(err.Error(), "lost") {
		t.Errorf("100 %% loss: %v", err)
	}
}

// TestApplicable: what a path carries and which services it reaches decide,
// from the instruments' declared needs, what can run through it.
func TestApplicable(t *testing.T) {
	forwarder := transport.Target{Host: "127.0.0.1", Carries: transport.CarriesTCP,
		Ports: map[transport.Service]int{transport.ServiceSSH: 18022, transport.ServiceIPerf3: 18201}}
	layer3 := transport.DirectTarget("10.0.0.1")
	for _, tc := range []struct {
		in     Instrument
		target transport.Target
		want   string // "" for applicable
	}{
		{Ping{}, forwarder, "not applicable: the path carries TCP, not ICMP"},
		{UDPRate{}, forwarder, "not applicable: the path carries TCP, not UDP"},
		{TCPRR{}, forwarder, "not applicable: the path does not reach the server's netperf"},
		{IPerf3{Streams: 1}, forwarder, ""},
		{Scp{}, forwarder, ""},
		{Ping{}, layer3, ""},
		{UDPRate{}, layer3, ""},
		{TCPRR{}, layer3, ""},
	} {
		err := Applicable(tc.in, tc.target)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
			t.Errorf("%s through %s: %v, want %q", tc.in.Name(), tc.target.Carries, err, tc.want)
		}
	}
}

func TestUDPRateMeasure(t *testing.T) {
	env, argv := replay(t, "iperf3-udp-reverse.json", 0)
	env.SocketBuffer = 212992 // Debian's stock net.core.rmem_max
	errs := []uint64{100, 160}
	env.UDPRcvbufErrors = func() (uint64, error) { v := errs[0]; errs = errs[1:]; return v, nil }
	m, err := UDPRate{}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(*argv, " "); got != "iperf3 -c 10.77.0.4 -p 5201 -u -l 200 -b 0 -w 212992 -R -t 10 -J" {
		t.Errorf("argv = %s", got)
	}
	// 136330 sent, 135665 received over 1.000016 s (see testdata/README.md).
	if math.Abs(m.Value-135665/1.000016) > 1 || m.Extra["sent"] != 136330 || m.Extra["rcvbuf_errors"] != 60 || m.Extra["socket_buffer_bytes"] != 212992 {
		t.Errorf("measurement %+v", m)
	}
	if math.Abs(m.Extra["loss_pct"]-100*665.0/136330) > 1e-9 {
		t.Errorf("loss %.4f %%, want the unreceived share of what was sent", m.Extra["loss_pct"])
	}
	env.UDPRcvbufErrors = func() (uint64, error) { return 0, errors.New("no snmp") }
	if _, err := (UDPRate{}).Measure(context.Background(), env); err == nil {
		t.Error("a failing counter must fail the sample")
	}
}

func TestSelect(t *testing.T) {
	all, ready, err := Select(nil)
	if err != nil || !ready || len(all) != 7 || all[0].Name() != "iperf3-1" || all[5].Name() != "udp-pps" || all[6].Name() != "rrul" {
		t.Fatalf("default selection: %v %v %v", all, ready, err)
	}
	ins, ready, err := Select([]string{"scp", "iperf3-1"})
	if err != nil || ready || len(ins) != 2 || ins[0].Name() != "iperf3-1" || ins[1].Name() != "scp" {
		t.Errorf("want run order iperf3-1, scp without ready: %v %v %v", ins, ready, err)
	}
	if ins, ready, err := Select([]string{"ready"}); err != nil || !ready || len(ins) != 0 {
		t.Errorf("ready alone: %v %v %v", ins, ready, err)
	}
	for _, bad := range [][]string{{"iperf"}, {"ping", "ping"}} {
		if _, _, err := Select(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestUDPRateWithoutBufferLeavesDefault(t *testing.T) {
	env, _ := replay(t, "iperf3-udp-reverse.json", 0)
	if got := strings.Join(UDPRate{}.Args(env), " "); strings.Contains(got, "-w") {
		t.Errorf("no SocketBuffer: want no -w, got %s", got)
	}
}
