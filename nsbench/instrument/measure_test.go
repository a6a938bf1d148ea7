package instrument

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/results"
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

// stagedScp is a Job whose Run plays an scp run: wall in all, stderr's
// lines at their staged times, and records the command.
func stagedScp(wall time.Duration, lines []proc.Line, exitCode int) (*Job, *[]string) {
	env, argv := replayOutput(nil, exitCode)
	run := env.Run
	env.Run = func(ctx context.Context, name string, args ...string) (proc.Result, error) {
		res, err := run(ctx, name, args...)
		var stderr []byte
		for _, l := range lines {
			stderr = append(stderr, l.Text+"\r\n"...)
		}
		res.Wall, res.Stderr, res.StderrLines = wall, stderr, lines
		return res, err
	}
	env.SSH = SSHClient{User: "bench", KeyPath: "/k", Form: FormSCP}
	env.Payload, env.PayloadBytes = "/p/payload.bin", 500_000_000
	return env, argv
}

// TestScpTimesTheCopyFromItsRequest: 500 MB in a 12 s run whose first 2 s
// were the SSH connection is 50 MB/s, not 500/12; the connection is
// reported apart and the wall stays the whole run.
func TestScpTimesTheCopyFromItsRequest(t *testing.T) {
	lines := []proc.Line{
		{At: 40 * time.Millisecond, Text: "OpenSSH_9.2p1 Debian-2+deb12u3, OpenSSL 3.0.15 3 Sep 2024"},
		{At: 1500 * time.Millisecond, Text: `Authenticated to 10.77.0.4 ([10.77.0.4]:22) using "publickey".`},
		{At: 2 * time.Second, Text: "debug1: Sending subsystem: sftp"},
		{At: 11 * time.Second, Text: `scp: local ftruncate "/dev/null": Invalid argument`},
		{At: 12 * time.Second, Text: "Transferred: sent 84208, received 500151544 bytes, in 10.0 seconds"},
	}
	env, argv := stagedScp(12*time.Second, lines, 0)
	m, err := Scp{}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if m.Value != 50 || m.WallSec != 12 || *m.PayloadBytes != 500_000_000 || m.MovedBytes != 500_000_000 {
		t.Errorf("500 MB copied in 10 of 12 s: %v MB/s, wall %v s, payload %v; want 50 MB/s, wall 12 s", m.Value, m.WallSec, *m.PayloadBytes)
	}
	if m.Extra[results.ScpConnectSec] != 2 || m.Extra[results.ScpTransferSec] != 10 {
		t.Errorf("extra = %v, want ssh_connect_sec 2, transfer_sec 10", m.Extra)
	}
	got := strings.Join(*argv, " ")
	if !strings.HasPrefix(got, "scp -v -c aes128-gcm@openssh.com -o Compression=no") || !strings.HasSuffix(got, "-i /k -P 22 bench@10.77.0.4:/p/payload.bin /dev/null") {
		t.Errorf("argv = %s", got)
	}

	// The legacy and the cat form: ssh sends a command, not a subsystem.
	for _, form := range []string{FormSCPLegacy, FormSSHCat} {
		cmd := "debug1: Sending command: scp -v -f /p/payload.bin"
		if form == FormSSHCat {
			cmd = "debug1: Sending command: cat '/p/payload.bin' > /dev/null"
		}
		env, argv := stagedScp(5*time.Second, []proc.Line{{At: 1 * time.Second, Text: cmd}}, 0)
		env.SSH.Form = form
		m, err := Scp{}.Measure(context.Background(), env)
		if err != nil || m.Value != 125 || m.Extra[results.ScpConnectSec] != 1 {
			t.Errorf("%s: %v MB/s, extra %v, %v; want 125 MB/s after 1 s of connection", form, m.Value, m.Extra, err)
		}
		if got := strings.Join(*argv, " "); !strings.Contains(got, "ssh -v -c ") && !strings.HasPrefix(got, "scp -v -O -c ") {
			t.Errorf("%s: argv %q has no -v for ssh", form, got)
		}
	}

	// Without ssh's line the copy's start is unknown: no rate.
	env, _ = stagedScp(5*time.Second, []proc.Line{{At: time.Second, Text: "debug1: Authentication succeeded (publickey)."}}, 0)
	if m, err := (Scp{}).Measure(context.Background(), env); err == nil || !strings.Contains(err.Error(), "Sending subsystem") {
		t.Errorf("no request line: %+v, %v; want an error", m, err)
	}

	// A failed copy quotes the reason, not ssh -v's chatter.
	env, _ = stagedScp(time.Second, []proc.Line{
		{Text: "OpenSSH_9.2p1 Debian-2+deb12u3, OpenSSL 3.0.15 3 Sep 2024"},
		{Text: "debug1: Connecting to 10.77.0.4 [10.77.0.4] port 22."},
		{Text: "ssh: connect to host 10.77.0.4 port 22: Connection refused"},
		{Text: "scp: Connection closed"},
	}, 255)
	if _, err := (Scp{}).Measure(context.Background(), env); err == nil || !strings.Contains(err.Error(), "): ssh: connect to host 10.77.0.4 port 22: Connection refused; scp: Connection closed") {
		t.Errorf("refused: %v", err)
	}
}

func TestScpForms(t *testing.T) {
	target := transport.DirectTarget("10.77.0.4")
	legacy := CopyCommand(SSHClient{User: "bench", KeyPath: "/k", Form: FormSCPLegacy}, target, "/f")
	if legacy[0] != "scp" || legacy[1] != "-O" {
		t.Errorf("legacy form: %q", legacy)
	}
	// The cat form's payload crosses the path: /dev/null is the client's,
	// by its shell, not the server's.
	cat := CopyCommand(SSHClient{User: "bench", KeyPath: "/k", Form: FormSSHCat}, target, "/f'x")
	if got := strings.Join(cat, " "); !strings.HasPrefix(got, `sh -c exec "$0" "$@" >/dev/null ssh -c `) || cat[len(cat)-1] != `cat '/f'\''x'` {
		t.Errorf("ssh cat form: %q", cat)
	}
	// A path's chosen ssh client (a build's) runs every form's SSH.
	target.SSHProgram = "/opt/ssh-b/ssh"
	for _, form := range []string{FormSCP, FormSCPLegacy} {
		argv := strings.Join(CopyCommand(SSHClient{User: "bench", KeyPath: "/k", Form: form}, target, "/f"), " ")
		if !strings.HasPrefix(argv, "scp ") || !strings.Contains(argv, " -S /opt/ssh-b/ssh ") {
			t.Errorf("%s with a chosen ssh: %s", form, argv)
		}
	}
	if cat := CopyCommand(SSHClient{User: "bench", KeyPath: "/k", Form: FormSSHCat}, target, "/f"); cat[3] != "/opt/ssh-b/ssh" {
		t.Errorf("ssh cat form with a chosen ssh: %q", cat)
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
	restartable := transport.Restarts{transport.PieceServer: fakePiece{}}
	for _, tc := range []struct {
		in       Instrument
		target   transport.Target
		want     string // "" for applicable
		restarts transport.Restarts
	}{
		{Ping{}, forwarder, "not applicable: the path carries TCP, not ICMP", nil},
		{UDPRate{}, forwarder, "not applicable: the path carries TCP, not UDP", nil},
		{TCPRR{}, forwarder, "not applicable: the path does not reach the server's netperf", nil},
		{IPerf3{Streams: 1}, forwarder, "", nil},
		{Scp{}, forwarder, "", nil},
		{Ping{}, layer3, "", nil},
		{UDPRate{}, layer3, "", nil},
		{TCPRR{}, layer3, "", nil},
		{Restart{Piece: transport.PieceServer}, layer3, "", restartable},
		{Restart{Piece: transport.PieceServer}, layer3, "not applicable: the path has no server that twnsbench can restart", nil},
		{Restart{Piece: transport.PieceRelay}, layer3, "not applicable: the path has no relay that twnsbench can restart", restartable},
		{Restart{Piece: transport.PieceServer}, transport.Target{Host: "127.0.0.1", Carries: transport.CarriesTCP},
			"not applicable: the path does not reach the server's many-rr", restartable},
	} {
		err := Applicable(tc.in, &transport.Path{Target: tc.target, Restarts: tc.restarts})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
			t.Errorf("%s through %s: %v, want %q", tc.in.Name(), tc.target.Carries, err, tc.want)
		}
	}
}

func TestUDPRateMeasure(t *testing.T) {
	env, argv := replay(t, "iperf3-udp-reverse.json", 0)
	env.SocketBuffer = 212992 // Debian's stock net.core.rmem_max
	errs := []uint64{100, 160}
	env.UDPRcvbufErrors = func(context.Context) (uint64, error) { v := errs[0]; errs = errs[1:]; return v, nil }
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
	env.UDPRcvbufErrors = func(context.Context) (uint64, error) { return 0, errors.New("no snmp") }
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

// IPerf3Cost paces one stream at its rate (-b) and carries the offered
// rate with the goodput; a sample short of 95 % of the rate is marked, so
// its cost at the rate has no reading, while one that reached it has.
func TestIPerf3CostMeasure(t *testing.T) {
	env, argv := replay(t, "iperf3-tcp-p1-reverse-200mbit.json", 0)
	m, err := IPerf3Cost{RateBps: 200_000_000}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"iperf3", "-c", "10.77.0.4", "-p", "5201", "-R", "-t", "10", "-P", "1", "-J", "-b", "200000000"}
	if !reflect.DeepEqual(*argv, want) {
		t.Errorf("argv = %q\nwant   %q", *argv, want)
	}
	if m.Value != 0.2007927663435987 || m.MovedBytes != 50200576 || m.Extra[results.OfferedGbps] != 0.2 {
		t.Errorf("measurement %+v", m)
	}
	if _, below := m.Extra[results.BelowOfferedRate]; below {
		t.Errorf("a sample at its rate is marked below it: %v", m.Extra)
	}
	own := map[string]float64{"client": 0.1, "server": 0.15}
	s := results.Sample{Instrument: CostName, Value: m.Value, MovedBytes: &m.MovedBytes, TransportCPUSec: own, Extra: m.Extra}
	if v, ok := s.Metric(results.CostCPUPerGB); !ok || math.Abs(v-0.25/0.050200576) > 1e-9 {
		t.Errorf("cost at the rate = %g, %v; want %g", v, ok, 0.25/0.050200576)
	}

	// The same capture offered 300 Mbit/s reached two thirds of it.
	env, _ = replay(t, "iperf3-tcp-p1-reverse-200mbit.json", 0)
	m, err = IPerf3Cost{RateBps: 300_000_000}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if share := m.Extra[results.BelowOfferedRate]; math.Abs(share-0.2007927663435987/0.3) > 1e-12 {
		t.Errorf("below_offered_rate = %g, want %g", share, 0.2007927663435987/0.3)
	}
	s = results.Sample{Instrument: CostName, Value: m.Value, MovedBytes: &m.MovedBytes, TransportCPUSec: own, Extra: m.Extra}
	if v, ok := s.Metric(results.CostCPUPerGB); ok {
		t.Errorf("a sample below its rate has a cost at the rate: %g", v)
	}
	if _, ok := s.Metric(results.TransportCPUPerGB); !ok {
		t.Error("the tunnel's CPU per GB is a figure of any sample that moved bytes")
	}
}

// --cost-rate reaches every iperf3-cost measured, and is refused when none is.
func TestWithCostRate(t *testing.T) {
	ins, err := WithCostRate([]Instrument{IPerf3{Streams: 1}, IPerf3Cost{RateBps: DefaultCostRateBps}}, 50_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if got := ins[1].(IPerf3Cost).RateBps; got != 50_000_000 {
		t.Errorf("rate %d, want 50000000", got)
	}
	if !strings.Contains(ins[1].Metrics()[1].Label, "50 Mbit/s") {
		t.Errorf("the cost metric's label names no rate: %q", ins[1].Metrics()[1].Label)
	}
	if _, err := WithCostRate([]Instrument{IPerf3{Streams: 1}}, 50_000_000); err == nil || !strings.Contains(err.Error(), CostName) {
		t.Errorf("no iperf3-cost measured: %v", err)
	}
	sel, _, err := Select([]string{"cost"})
	if err != nil || len(sel) != 1 || sel[0].Name() != CostName {
		t.Errorf("--instruments cost selects %v, %v", sel, err)
	}
}

// tcp_rr, tcp_crr and ssh_setup count their transactions, so the tunnel's
// own CPU per transaction is a figure of their samples.
func TestTransactionsCounted(t *testing.T) {
	env, _ := replay(t, "netperf-rr-p0.txt", 0)
	m, err := TCPRR{}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if want := m.Value * 10; m.Extra[results.Transactions] != want {
		t.Errorf("tcp_rr transactions = %g, want rate × 10 s = %g", m.Extra[results.Transactions], want)
	}
	s := results.Sample{Instrument: "tcp_rr", Value: m.Value, TransportCPUSec: map[string]float64{"client": 0.5, "server": 0.5}, Extra: m.Extra}
	if v, ok := s.Metric(results.TransportCPUPerTrans); !ok || math.Abs(v-1e6/(m.Value*10)) > 1e-9 {
		t.Errorf("CPU per transaction = %g, %v; want %g", v, ok, 1e6/(m.Value*10))
	}
	s.TransportCPUSec = nil // a kernel tunnel: no figure, never 0
	if v, ok := s.Metric(results.TransportCPUPerTrans); ok {
		t.Errorf("without the transport's own CPU: %g", v)
	}
	for _, in := range []Instrument{TCPRR{}, TCPCRR{}, ManyRR{Conns: 50}, SSHSetup{}} {
		if !slices.ContainsFunc(in.Metrics(), func(m results.Metric) bool {
			return m.Key == results.TransportCPUPerTrans && m.Better == results.BetterLower
		}) {
			t.Errorf("%s declares no CPU per transaction", in.Name())
		}
	}
}
