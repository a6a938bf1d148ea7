package instrument

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

func TestParseNetperfCRRCaptured(t *testing.T) {
	for file, want := range map[string]rrResult{
		"netperf-crr-p0.txt": {TransPerSec: 14174.21, MeanLatencyUs: 70.46, P50LatencyUs: 62, P99LatencyUs: 265},
		// -P 1: the "MIGRATED TCP Connect/Request/Response TEST" banner and header first.
		"netperf-crr-p1.txt": {TransPerSec: 10235.51, MeanLatencyUs: 97.60, P50LatencyUs: 59, P99LatencyUs: 563},
	} {
		got, err := parseNetperfRR(parseTestdata(t, file))
		if err != nil || got != want {
			t.Errorf("%s: got %+v, %v\nwant %+v", file, got, err, want)
		}
	}
}

func TestTCPCRRMeasure(t *testing.T) {
	env, argv := replay(t, "netperf-crr-p0.txt", 0)
	m, err := TCPCRR{}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(*argv, " "); got != "netperf -H 10.77.0.4 -p 12865 -t TCP_CRR -l 10 -P 0 -- -r 64,64 -P 12867,12866 -o THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY" {
		t.Errorf("argv = %s", got)
	}
	if m.Value != 14174.21 || m.Unit != "conn/s" || *m.MeanUs != 70.46 || *m.P50Us != 62 || *m.P99Us != 265 || m.WallSec != 2 {
		t.Errorf("measurement %+v", m)
	}
	env, _ = replayOutput([]byte("0.00,0.00,0,0\n"), 0)
	if _, err := (TCPCRR{}).Measure(context.Background(), env); !errors.Is(err, ErrNothingMeasured) || !strings.Contains(err.Error(), "netperf TCP_CRR reported 0 connections/s") {
		t.Errorf("zero rate: %v", err)
	}
	env, _ = replay(t, "netperf-rr-refused.txt", 255)
	if _, err := (TCPCRR{}).Measure(context.Background(), env); err == nil || !strings.Contains(err.Error(), "netserver") {
		t.Errorf("refused: %v", err)
	}
}

func TestSummariseLogins(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var d []time.Duration
		for _, x := range xs {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	for _, tc := range []struct {
		walls []time.Duration
		want  loginSummary
	}{
		// 4 logins in 1 s; p50 between 200 and 300 ms; p99 at rank 2.97.
		{ms(400, 100, 300, 200), loginSummary{Rate: 4, P50: 0.25, P99: 0.397}},
		{ms(500), loginSummary{Rate: 2, P50: 0.5, P99: 0.5}},
		// One slow login of 101: the rate is of the summed time, p99 near it.
		{append(ms(100, 100, 100, 100, 100, 100, 100, 100, 100, 100), time.Second), loginSummary{Rate: 11.0 / 2, P50: 0.1, P99: 0.91}},
	} {
		got := summariseLogins(tc.walls)
		if math.Abs(got.Rate-tc.want.Rate) > 1e-9 || math.Abs(got.P50-tc.want.P50) > 1e-9 || math.Abs(got.P99-tc.want.P99) > 1e-9 {
			t.Errorf("%v: got %+v want %+v", tc.walls, got, tc.want)
		}
	}
}

// loginJob is a Job whose every ssh run takes wall and fails from the
// failAt'th on (0: never), counting the runs.
func loginJob(wall time.Duration, failAt int) (*Job, *[][]string) {
	var runs [][]string
	env := &Job{
		Duration: 10 * time.Second,
		SSH:      SSHClient{User: "bench", KeyPath: "/k", KnownHosts: "/kh"},
		Run: func(_ context.Context, name string, args ...string) (proc.Result, error) {
			runs = append(runs, append([]string{name}, args...))
			if len(runs) == failAt {
				return proc.Result{Stderr: []byte("ssh: connect to host 10.77.0.4 port 22: Connection refused\n"), Wall: wall}, errors.New("exit status 255")
			}
			return proc.Result{Wall: wall}, nil
		},
	}
	env.Target.Host, env.Target.Ports = "10.77.0.4", map[transport.Service]int{transport.ServiceSSH: 22}
	return env, &runs
}

func TestSSHSetupMeasure(t *testing.T) {
	env, runs := loginJob(2*time.Second, 0)
	m, err := SSHSetup{}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	// Logins until their walls add up to the 10 s test: five of 2 s.
	if len(*runs) != 5 || m.Value != 0.5 || m.Unit != "sessions/s" || m.Extra["p50_sec"] != 2 || m.Extra["p99_sec"] != 2 || m.Extra["logins"] != 5 || m.WallSec != 10 {
		t.Errorf("%d logins, measurement %+v", len(*runs), m)
	}
	last := (*runs)[0]
	if last[0] != "ssh" || !reflect.DeepEqual(last[len(last)-4:], []string{"-p", "22", "bench@10.77.0.4", "true"}) {
		t.Errorf("login command %q", last)
	}
	env, _ = loginJob(2*time.Second, 3)
	if _, err := (SSHSetup{}).Measure(context.Background(), env); err == nil || !strings.Contains(err.Error(), "login 3") || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("a failed login: %v", err)
	}
}

func TestSelectAppSet(t *testing.T) {
	names := func(ins []Instrument) string {
		var n []string
		for _, in := range ins {
			n = append(n, in.Name())
		}
		return strings.Join(n, ",")
	}
	ins, ready, err := Select([]string{"app"})
	if err != nil || ready || names(ins) != "tcp_crr,ssh_setup,many_rr,rpm" {
		t.Errorf("app: %s ready %v err %v", names(ins), ready, err)
	}
	ins, _, err = Select([]string{"app", "tcp_rr"})
	if err != nil || names(ins) != "tcp_rr,tcp_crr,ssh_setup,many_rr,rpm" {
		t.Errorf("app,tcp_rr: %s err %v", names(ins), err)
	}
	if _, _, err := Select([]string{"app", "tcp_crr"}); err == nil || !strings.Contains(err.Error(), `"tcp_crr" given twice`) {
		t.Errorf("app,tcp_crr: %v", err)
	}
	// The default run does not grow: the set runs only when named.
	ins, _, _ = Select(nil)
	if n := names(ins); strings.Contains(n, "tcp_crr") || strings.Contains(n, "ssh_setup") || strings.Contains(n, "rpm") {
		t.Errorf("default selection %s", n)
	}
}
