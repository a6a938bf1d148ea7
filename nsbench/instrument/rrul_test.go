package instrument

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

func unixTime(sec float64) time.Time {
	return time.Unix(0, int64(sec*1e9))
}

// TestRRULMeasurementCaptured reduces captured runs (testdata/README.md):
// only the probes sent during iperf3's test count as loaded, the increase
// is loaded p50 − idle p50, and the series share the load's time axis.
func TestRRULMeasurementCaptured(t *testing.T) {
	idle, _, err := parsePingProbes(parseTestdata(t, "ping-probes-idle.txt"))
	if err != nil {
		t.Fatal(err)
	}
	loaded, sum, err := parsePingProbes(parseTestdata(t, "ping-probes-loaded.txt"))
	if err != nil {
		t.Fatal(err)
	}
	load, err := parseIperf3Bidir(parseTestdata(t, "iperf3-tcp-p4-bidir.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The loaded ping started at 306.5; say iperf3 returned 2.2 s later:
	// its 2 s test is the window [306.7, 308.7], 19 of the 29 probes.
	loadStart := unixTime(1796171306.5)
	m, err := rrulMeasurement(rrulRun{
		flows: []flowRun{{probe: pingProbe, idle: idle, loaded: loaded, sent: sum.Transmitted}}, load: load,
		start: unixTime(1796171305.4), loadStart: loadStart, loadEnd: loadStart.Add(2200 * time.Millisecond),
		done:     loadStart.Add(3 * time.Second),
		duration: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"idle_p50_ms": 0.05, "loaded_p50_ms": 0.038, "loaded_p90_ms": 0.095, "loaded_p99_ms": 0.1114,
		"loaded_probes": 19, "idle_probes": 10, "probe_loss_pct": 0,
		"down_gbps": 2.453853088868859, "up_gbps": 7.00144522619382, "retransmits_down": 23, "retransmits_up": 22,
	}
	for k, v := range want {
		if got, ok := m.Extra[k]; !ok || !near(got, v) {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if !near(m.Value, 0.038-0.05) || m.Unit != "ms" || m.Method != pingProbe.method {
		t.Errorf("value %v %s, method %q", m.Value, m.Unit, m.Method)
	}
	if m.MovedBytes != 614924235+1754529792 || !near(m.WallSec, 4.1) {
		t.Errorf("moved %d wall %v", m.MovedBytes, m.WallSec)
	}
	series := map[string][]float64{}
	for _, s := range m.Series {
		series[s.Key] = s.T
		if len(s.T) != len(s.V) {
			t.Errorf("%s: %d times, %d values", s.Key, len(s.T), len(s.V))
		}
	}
	// iperf3's last interval (2.000074) ends when it returned (2.2 s).
	if tp := series["throughput"]; len(tp) != 2 || tp[1] != 2.2 || tp[0] != 1.202 || len(series["throughput_up"]) != 2 {
		t.Errorf("throughput times %v", tp)
	}
	if lat := series["latency_loaded"]; len(lat) != 19 || lat[0] < 0.2 || lat[18] > 2.2 {
		t.Errorf("loaded latency times %v: want 19 within the test", lat)
	}
	if lat := series["latency_idle"]; len(lat) != 10 || math.Abs(lat[0]-0.095) > 0.001 {
		t.Errorf("idle latency times %v", lat)
	}
	// Probes lost under load count within the test only: seq 5 and 6
	// (sent in it) and 29 (after it) unanswered, each with a later one
	// answered: lost, none waiting.
	var gaps []probeRTT
	for _, p := range loaded {
		if p.Seq != 5 && p.Seq != 6 && p.Seq != 29 {
			gaps = append(gaps, p)
		}
	}
	if sent, lost, waiting := lostInWindow(gaps, 29, unixSec(loadStart)+0.2, unixSec(loadStart)+2.2); sent != 19 || lost != 2 || len(waiting) != 0 {
		t.Errorf("lost %d and %d waiting of %d in the window, want 2 and 0 of 19", lost, len(waiting), sent)
	}
	// In all: seq 29 and 30 were sent after the last one answered (28):
	// still waiting, not lost.
	if sent, lost, waiting := lostInWindow(gaps, 30, 0, math.MaxFloat64); sent != 30 || lost != 2 || len(waiting) != 2 {
		t.Errorf("lost %d and %d waiting of %d in all, want 2 and 2 of 30 (one more sent than answered at the end)", lost, len(waiting), sent)
	}
	_, err = rrulMeasurement(rrulRun{flows: []flowRun{{probe: pingProbe, idle: idle, loaded: loaded}}, load: load,
		start: loadStart, loadStart: loadStart.Add(time.Hour), loadEnd: loadStart.Add(time.Hour), duration: 2 * time.Second})
	parseWantErr(t, err, "none of the probe's 29 readings fell within iperf3's test")
}

// TestRRULCensored: the default run's failure ("none of the probe's 1
// readings fell within iperf3's test", tw on the WAN): netperf completed
// one transaction during iperf3's start-up, and the next outlasted the
// test. That is the strongest bufferbloat, not a failed measurement: the
// loaded latency is at least the time the transaction waited, and the
// sample says so. The same for pings: every one sent in the test
// unanswered.
func TestRRULCensored(t *testing.T) {
	idle := []probeRTT{{At: 100, RTTMs: 30.2, Span: 0.1, Transactions: 3.3}, {At: 100.1, RTTMs: 30.4, Span: 0.1, Transactions: 3.3}}
	loadStart := unixTime(200)
	// One reading for the interval 200.2–200.3; iperf3's 10 s test ends
	// at 210.7; the probe stopped at 212.7, its transaction unanswered.
	run := rrulRun{
		flows: []flowRun{{probe: netperfProbe, idle: idle, loaded: []probeRTT{{At: 200.25, RTTMs: 31, Span: 0.1, Transactions: 3.2}}, stop: unixTime(212.7)}},
		start: unixTime(95), loadStart: loadStart, loadEnd: unixTime(210.7), done: unixTime(212.7),
		duration: 10 * time.Second,
	}
	m, err := rrulMeasurement(run)
	if err != nil {
		t.Fatalf("a transaction that outlasts the test is censored, not a failure: %v", err)
	}
	close := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	if !close(m.Extra["censored_wait_ms"], 12400) || !close(m.Extra["loaded_p50_ms"], 12400) || !close(m.Value, 12400-30.3) ||
		m.Extra["probe_unanswered"] != 1 || m.Extra["probe_sent"] != 1 {
		t.Errorf("censored: value %v, %+v; want a 12400 ms wait, 1 unanswered of 1", m.Value, m.Extra)
	}
	for _, s := range m.Series {
		if s.Key == "latency_loaded" && len(s.V) != 0 {
			t.Errorf("the censored wait is drawn as a reading: %v", s.V)
		}
	}

	// Readings through most of the test, then a transaction in flight
	// across its end: the wait joins the readings as a lower bound.
	var ps []probeRTT
	for i := range 50 {
		ps = append(ps, probeRTT{At: 200.75 + 0.1*float64(i), RTTMs: 100, Span: 0.1, Transactions: 1})
	}
	run.flows[0].loaded = ps // the last ends at 205.7: 7 s unanswered; p99 is halfway between 100 and 7000
	m, err = rrulMeasurement(run)
	if err != nil {
		t.Fatal(err)
	}
	if !close(m.Extra["censored_wait_ms"], 7000) || !close(m.Extra["loaded_p99_ms"], 3550) ||
		m.Extra["probe_unanswered"] != 1 || m.Extra["probe_sent"] != 51 || m.Extra["loaded_probes"] != 51 {
		t.Errorf("partly censored: %+v", m.Extra)
	}
	// A transaction that completed after the test (its interval spans
	// the test's end) is a reading, not a censored one.
	run.flows[0].loaded = append(ps, probeRTT{At: 208.2, RTTMs: 5000, Span: 5, Transactions: 1})
	m, err = rrulMeasurement(run)
	if _, censored := m.Extra["censored_wait_ms"]; err != nil || censored || m.Extra["probe_unanswered"] != 0 || m.Extra["loaded_probes"] != 51 {
		t.Errorf("a completed slow transaction: %v, %+v", err, m.Extra)
	}

	// ping: 100 probes sent in the test, none answered.
	run = rrulRun{flows: []flowRun{{probe: pingProbe, idle: []probeRTT{{At: 100, RTTMs: 30, Seq: 1}},
		loaded: []probeRTT{{At: 200.1, RTTMs: 31, Seq: 1}, {At: 200.2, RTTMs: 31, Seq: 2}}, sent: 125, stop: unixTime(212.7)}},
		start: unixTime(95), loadStart: loadStart, loadEnd: unixTime(210.7), done: unixTime(212.7),
		duration: 10 * time.Second}
	m, err = rrulMeasurement(run)
	if err != nil {
		t.Fatal(err)
	}
	// None lost: every one was still waiting when ping stopped.
	if !close(m.Extra["censored_wait_ms"], 2000) || m.Extra["probe_unanswered"] != 101 || m.Extra["probe_sent"] != 101 ||
		m.Extra["probe_lost"] != 0 || m.Extra["probe_loss_pct"] != 0 {
		t.Errorf("ping, none answered: %+v", m.Extra)
	}
}

// TestRRULPingPartlyCensored: pings still unanswered when the probe
// stopped (no later one answered) are censored like the netperf probe's
// transaction, not dropped: each waited at least from the test's end (the
// latest it can have been sent) until the probe stopped, and that wait
// joins the loaded readings as a lower bound, in its own series. Dropping
// them biased p90/p99 low.
func TestRRULPingPartlyCensored(t *testing.T) {
	// Every ping answered but the last 20 in the test (seq 81–100), and
	// seq 101–120, sent after it, unanswered too.
	m, err := rrulMeasurement(pingRun(func(seq int) bool { return seq > 80 }))
	if err != nil {
		t.Fatal(err)
	}
	// Seq 81–100 were sent by the test's end, 210.7: each waited at least
	// 2000 ms. None is lost: no later probe was answered.
	if m.Extra["probe_unanswered"] != 20 || m.Extra["probe_sent"] != 100 || !near(m.Extra["censored_wait_ms"], 2000) ||
		m.Extra["loaded_probes"] != 100 || m.Extra["probe_lost"] != 0 || m.Extra["probe_loss_pct"] != 0 {
		t.Errorf("20 of 100 unanswered: %+v", m.Extra)
	}
	// With the 20 bounds in: p50 is an answered 20 ms, p90 and p99 the
	// 2000 ms bound (dropped, they were 20 ms).
	if !near(m.Extra["loaded_p50_ms"], 20) || !near(m.Extra["loaded_p90_ms"], 2000) || !near(m.Extra["loaded_p99_ms"], 2000) {
		t.Errorf("loaded p50/p90/p99 %v / %v / %v, want 20 / 2000 / 2000 (the censored waits count)",
			m.Extra["loaded_p50_ms"], m.Extra["loaded_p90_ms"], m.Extra["loaded_p99_ms"])
	}
	var bounds, readings int
	for _, s := range m.Series {
		switch s.Key {
		case "latency_loaded":
			readings = len(s.V)
		case "latency_loaded_censored":
			bounds = len(s.V)
			if len(s.V) > 0 && (!near(s.V[0], 2000) || !near(s.T[0], 10.7)) {
				t.Errorf("censored series starts (%v s, %v ms), want (10.7 s, 2000 ms)", s.T[0], s.V[0])
			}
		}
	}
	if readings != 80 || bounds != 20 {
		t.Errorf("series: %d readings and %d censored waits, want 80 and 20", readings, bounds)
	}
}

// fakeTools answers rrul's tool runs: iperf3 with the captured --bidir run,
// each probe with readings timed like a real run's (idle rtt ms on its
// first run, then the loaded ones: loadedRR for netperf when set),
// recording every command.
type fakeTools struct {
	mu             sync.Mutex
	argv           []string
	idle, loaded   float64
	loadedRR       float64
	calls          map[string]int
	iperf3Refused  bool
	iperf3Stalls   bool // blocks until its context ends, as proc.Run's kill
	loadedRRStalls bool // netperf's loaded run blocks so
}

func (f *fakeTools) run(t *testing.T) func(context.Context, string, ...string) (proc.Result, error) {
	bidir := parseTestdata(t, "iperf3-tcp-p4-bidir.json")
	refused := parseTestdata(t, "iperf3-error-refused.json")
	return func(ctx context.Context, name string, args ...string) (proc.Result, error) {
		f.mu.Lock()
		f.argv = append(f.argv, name+" "+strings.Join(args, " "))
		if f.calls == nil {
			f.calls = map[string]int{}
		}
		f.calls[name]++
		first := f.calls[name] == 1
		f.mu.Unlock()
		rtt := f.loaded
		if name == "netperf" && f.loadedRR > 0 {
			rtt = f.loadedRR
		}
		if first {
			rtt = f.idle
		}
		if name == "netperf" && !first && f.loadedRRStalls {
			<-ctx.Done()
			return proc.Result{}, fmt.Errorf("client/netperf: %w", ctx.Err())
		}
		// A probe reading every 100 ms over the last 3 s: the loaded
		// probe's run covers iperf3's, which returns at once here.
		now := float64(time.Now().UnixNano()) / 1e9
		var b strings.Builder
		switch name {
		case "iperf3":
			if f.iperf3Stalls {
				<-ctx.Done()
				return proc.Result{}, fmt.Errorf("client/iperf3: %w", ctx.Err())
			}
			if f.iperf3Refused {
				return proc.Result{Stdout: refused, Wall: time.Second}, nil
			}
			return proc.Result{Stdout: bidir, Wall: 2 * time.Second}, nil
		case "ping":
			fmt.Fprintf(&b, "PING 10.77.0.4 (10.77.0.4) 56(84) bytes of data.\n")
			for i := 0; i < 30; i++ {
				fmt.Fprintf(&b, "[%.6f] 64 bytes from 10.77.0.4: icmp_seq=%d ttl=64 time=%.3f ms\n", now-3+0.1*float64(i), i+1, rtt)
			}
			fmt.Fprintf(&b, "\n--- 10.77.0.4 ping statistics ---\n32 packets transmitted, 30 received, 6.25%% packet loss, time 3000ms\n")
			fmt.Fprintf(&b, "rtt min/avg/max/mdev = %.3f/%.3f/%.3f/0.000 ms\n", rtt, rtt, rtt)
		case "netperf":
			for i := 0; i < 30; i++ {
				fmt.Fprintf(&b, "%.2f,Trans/s,0.100,%.3f\n", 1000/rtt, now-3+0.1*float64(i+1))
			}
			fmt.Fprintf(&b, "%.2f,%.2f,%.0f,%.0f", 1000/rtt, rtt*1000, rtt*1000, rtt*1000)
		}
		return proc.Result{Stdout: []byte(b.String()), Wall: 3 * time.Second}, nil
	}
}

// TestRRULMeasure: the probe flows follow the path (ICMP and TCP_RR at
// once where ICMP is carried, netperf TCP_RR alone through a port
// forwarder), iperf3 runs --bidir with 4 streams, and the sample carries
// both directions and each flow's increase under its own keys: the
// headline flow's unprefixed, TCP_RR's beside ICMP under tcp_rr_ (ping
// loaded at 20.5 ms, TCP_RR at 25.5 ms: never pooled).
func TestRRULMeasure(t *testing.T) {
	forwarder := transport.Target{Host: "127.0.0.1", Carries: transport.CarriesTCP,
		Ports: map[transport.Service]int{transport.ServiceIPerf3: 18201, transport.ServiceNetperf: 18865, transport.ServiceNetperfData: 18866}}
	for _, tc := range []struct {
		target     transport.Target
		idle, load []string // the idle runs, then the loaded ones with iperf3, in any order
		method     string
		value      float64
		besideRR   bool // a TCP_RR flow beside the headline one
	}{
		{transport.DirectTarget("10.77.0.4"), []string{
			"ping -n -D -i 0.1 -w 2 10.77.0.4",
			"netperf -H 10.77.0.4 -p 12865 -t TCP_RR -l 2 -P 0 -D -0.1 -- -r 64,64 -P 12867,12866 -o THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY",
		}, []string{
			"ping -n -D -i 0.1 -w 4 10.77.0.4",
			"netperf -H 10.77.0.4 -p 12865 -t TCP_RR -l 4 -P 0 -D -0.1 -- -r 64,64 -P 12867,12866 -o THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY",
			"iperf3 -c 10.77.0.4 -p 5201 --bidir -t 2 -P 4 -J",
		}, "latency by ICMP echo", 20, true},
		{forwarder, []string{
			"netperf -H 127.0.0.1 -p 18865 -t TCP_RR -l 2 -P 0 -D -0.1 -- -r 64,64 -P 12867,18866 -o THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY",
		}, []string{
			"netperf -H 127.0.0.1 -p 18865 -t TCP_RR -l 4 -P 0 -D -0.1 -- -r 64,64 -P 12867,18866 -o THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY",
			"iperf3 -c 127.0.0.1 -p 18201 --bidir -t 2 -P 4 -J",
		}, "latency by netperf TCP_RR", 25, false},
	} {
		t.Run(tc.target.Carries.String(), func(t *testing.T) {
			if err := Applicable(RRUL{}, &transport.Path{Target: tc.target}); err != nil {
				t.Fatal(err)
			}
			f := &fakeTools{idle: 0.5, loaded: 20.5, loadedRR: 25.5}
			env := &Job{Target: tc.target, Duration: 2 * time.Second, Run: f.run(t)}
			m, err := RRUL{}.Measure(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			// The idle probes first, at once; then the loaded ones and
			// iperf3 at once.
			n := len(tc.idle)
			if len(f.argv) != n+len(tc.load) || !sameSet(f.argv[:n], tc.idle) || !sameSet(f.argv[n:], tc.load) {
				t.Errorf("commands:\n%s\nwant\n%s", strings.Join(f.argv, "\n"), strings.Join(append(tc.idle, tc.load...), "\n"))
			}
			// netperf's rates have two decimals: 1000/39.22 is 25.4972 ms.
			close := func(a, b float64) bool { return math.Abs(a-b) < 5e-3 }
			if !close(m.Value, tc.value) || !close(m.Extra["idle_p50_ms"], 0.5) || !close(m.Extra["loaded_p99_ms"], tc.value+0.5) ||
				!near(m.Extra["down_gbps"], 2.453853088868859) || !near(m.Extra["up_gbps"], 7.00144522619382) {
				t.Errorf("measurement %v %+v", m.Value, m.Extra)
			}
			if n := m.Extra["loaded_probes"]; n < 18 || n > 21 {
				t.Errorf("%v loaded probes: want those of the last 2 s", n)
			}
			// (the fake ping reports 2 of 32 unanswered, at its end: in
			// the test's window or just after it, as the clock falls; one
			// in it is censored)
			unanswered := m.Extra["probe_unanswered"]
			if unanswered > map[bool]float64{true: 2}[tc.target.Carries.Has(transport.CarriesICMP)] || m.Extra["probe_sent"] < 18 {
				t.Errorf("unanswered %v of %v probes, want none", unanswered, m.Extra["probe_sent"])
			}
			if _, censored := m.Extra["censored_wait_ms"]; censored != (unanswered > 0) {
				t.Errorf("censored %v with %v unanswered: %+v", censored, unanswered, m.Extra)
			}
			if _, hasLoss := m.Extra["probe_loss_pct"]; hasLoss != tc.target.Carries.Has(transport.CarriesICMP) {
				t.Errorf("probe loss present %v: want it with ICMP only", hasLoss)
			}
			// The TCP_RR flow beside ICMP: its own increase (25 ms, not
			// the ping's 20), quantiles, transactions (≈ 39.22/s over
			// 2 s) and series; none through a forwarder, where TCP_RR is
			// the headline.
			_, beside := m.Extra["tcp_rr_value"]
			if beside != tc.besideRR || beside && (!close(m.Extra["tcp_rr_value"], 25) || !close(m.Extra["tcp_rr_idle_p50_ms"], 0.5) ||
				!close(m.Extra["tcp_rr_loaded_p50_ms"], 25.5) || m.Extra["tcp_rr_probe_unanswered"] != 0 || m.Extra["tcp_rr_probe_sent"] < 70) {
				t.Errorf("TCP_RR beside: %v, want %v: %+v", beside, tc.besideRR, m.Extra)
			}
			keys := map[string]int{}
			for _, se := range m.Series {
				keys[se.Key] = len(se.V)
			}
			flows := map[bool]int{true: 2, false: 1}[tc.besideRR]
			if !strings.HasPrefix(m.Method, tc.method) || len(m.Series) != 2+2*flows+min(1, int(unanswered)) ||
				tc.besideRR && (keys["tcp_rr_latency_idle"] != int(m.Extra["tcp_rr_idle_probes"]) || keys["tcp_rr_latency_loaded"] != int(m.Extra["tcp_rr_loaded_probes"])) {
				t.Errorf("method %q, series %v", m.Method, keys)
			}
			if tc.besideRR && !strings.Contains(m.Method, "; beside it, at the same time, latency by netperf TCP_RR") {
				t.Errorf("method %q does not name the TCP_RR flow beside", m.Method)
			}
		})
	}
	// A flow that stalls: the TCP_RR beside ICMP never returns under load
	// while ping and iperf3 end; the sample's deadline ends it, and the
	// sample fails (its figures would be one flow short).
	f := &fakeTools{idle: 0.5, loaded: 20.5, loadedRRStalls: true}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := RRUL{}.Measure(ctx, &Job{Target: transport.DirectTarget("10.77.0.4"), Duration: time.Second, Run: f.run(t)})
	cancel()
	parseWantErr(t, err, "loaded latency: ")
	parseWantErr(t, err, "deadline exceeded")
	// A path that stalls under load: iperf3 never returns; the sample's
	// deadline (the orchestrator's, from Budget) ends it.
	f = &fakeTools{idle: 0.5, loaded: 20.5, iperf3Stalls: true}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = RRUL{}.Measure(ctx, &Job{Target: forwarder, Duration: time.Second, Run: f.run(t)})
	cancel()
	parseWantErr(t, err, "deadline exceeded")
	if b := (RRUL{}).Budget(&Job{Duration: 10 * time.Second}); b.Planned != 17*time.Second || b.Deadline() != 27*time.Second {
		t.Errorf("rrul budget %+v, deadline %v: want 5 s idle + 10 s + 2 s slack, then 10 s more", b, b.Deadline())
	}
	f = &fakeTools{idle: 0.5, loaded: 20.5, iperf3Refused: true}
	_, err = RRUL{}.Measure(context.Background(), &Job{Target: forwarder, Duration: 2 * time.Second, Run: f.run(t)})
	parseWantErr(t, err, "Connection refused")
}

// TestRRULQuantileBounds: a loaded quantile is marked a lower bound
// exactly when a censored wait reaches it. 20 of 100 pings unanswered
// (TestRRULPingPartlyCensored's run): p50 stays an exact 20 ms, p90 and
// p99 are bounds; the increase (from p50) is exact.
func TestRRULQuantileBounds(t *testing.T) {
	m, err := rrulMeasurement(pingRun(func(seq int) bool { return seq > 80 }))
	if err != nil {
		t.Fatal(err)
	}
	for key, bound := range map[string]bool{"loaded_p50_ms": false, "loaded_p90_ms": true, "loaded_p99_ms": true} {
		if _, got := m.Extra[key+"_at_least"]; got != bound {
			t.Errorf("%s a lower bound: %v, want %v (%+v)", key, got, bound, m.Extra)
		}
	}
	// The declarations say which extra marks each metric a bound.
	by := map[string]string{}
	for _, d := range (RRUL{}).Metrics() {
		by[d.Key] = d.CensoredBy
	}
	if by["value"] != "loaded_p50_ms_at_least" || by["loaded_p99_ms"] != "loaded_p99_ms_at_least" ||
		by["censored_wait_ms"] != "censored_wait_ms" || by["idle_p50_ms"] != "" {
		t.Errorf("declared censored_by: %v", by)
	}
}

// sameSet says whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// TestRRULTwoFlows: ICMP and TCP_RR probed at once are reduced apart, each
// censored on its own. Ping: 100 probes through iperf3's test [200.7,
// 210.7], every one answered in 20 ms (idle 10 ms): increase 10 ms,
// exact. TCP_RR beside it: readings of 40 ms through 205.7 (idle 30 ms),
// then a transaction in flight across the test's end until the flow
// stopped at 212.7: a 7000 ms wait, censored in the TCP_RR flow alone.
func TestRRULTwoFlows(t *testing.T) {
	var ping, rr []probeRTT
	for seq := 1; seq <= 120; seq++ {
		ping = append(ping, probeRTT{At: 200.65 + 0.1*float64(seq), RTTMs: 20, Seq: seq})
	}
	for i := range 50 {
		rr = append(rr, probeRTT{At: 200.75 + 0.1*float64(i), RTTMs: 40, Span: 0.1, Transactions: 2.5})
	}
	run := rrulRun{flows: []flowRun{
		{probe: pingProbe, idle: []probeRTT{{At: 100, RTTMs: 10, Seq: 1}, {At: 100.1, RTTMs: 12, Seq: 2}}, loaded: ping, sent: 120, stop: unixTime(212.6)},
		{probe: netperfProbe, idle: []probeRTT{{At: 100.05, RTTMs: 30, Span: 0.1, Transactions: 3.3}}, loaded: rr, stop: unixTime(212.7)},
	}, start: unixTime(95), loadStart: unixTime(200), loadEnd: unixTime(210.7), done: unixTime(212.7), duration: 10 * time.Second}
	m, err := rrulMeasurement(run)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		// the headline flow, ICMP: unprefixed, as before the second flow
		"idle_p50_ms": 11, "loaded_p50_ms": 20, "loaded_p99_ms": 20, "probe_sent": 100, "probe_unanswered": 0, "probe_loss_pct": 0,
		"loaded_probes": 100, "idle_probes": 2,
		// TCP_RR beside it: 50 readings and the censored wait; p50 is a
		// reading, p99 (at 0.99 · 50 = 49.5) halfway between the 50th
		// reading and the 7000 ms bound; 50 · 2.5 transactions and the
		// one in flight
		"tcp_rr_value": 10, "tcp_rr_idle_p50_ms": 30, "tcp_rr_loaded_p50_ms": 40, "tcp_rr_loaded_p99_ms": 40 + 0.5*(7000-40),
		"tcp_rr_probe_sent": 126, "tcp_rr_probe_unanswered": 1, "tcp_rr_censored_wait_ms": 7000, "tcp_rr_loaded_probes": 51,
		"tcp_rr_loaded_p99_ms_at_least": 1,
	}
	for k, v := range want {
		if got, ok := m.Extra[k]; !ok || !near(got, v) {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if !near(m.Value, 9) {
		t.Errorf("value %v, want the ICMP flow's increase, 20 − 11 = 9", m.Value)
	}
	for _, k := range []string{"censored_wait_ms", "loaded_p99_ms_at_least", "tcp_rr_loaded_p50_ms_at_least", "tcp_rr_probe_loss_pct", "tcp_rr_down_gbps"} {
		if _, ok := m.Extra[k]; ok {
			t.Errorf("%s present: %+v", k, m.Extra)
		}
	}
	keys := map[string]int{}
	for _, se := range m.Series {
		keys[se.Key] = len(se.V)
	}
	for k, n := range map[string]int{"latency_idle": 2, "latency_loaded": 100, "tcp_rr_latency_idle": 1, "tcp_rr_latency_loaded": 50,
		"tcp_rr_latency_loaded_censored": 1, "latency_loaded_censored": 0} {
		if keys[k] != n {
			t.Errorf("series %s: %d points, want %d (%v)", k, keys[k], n, keys)
		}
	}
	// The declarations: each TCP_RR figure beside ICMP is censored by its
	// own marks, never by the headline flow's.
	by := map[string]string{}
	for _, d := range (RRUL{}).Metrics() {
		by[d.Key] = d.CensoredBy
	}
	if by["tcp_rr_value"] != "tcp_rr_loaded_p50_ms_at_least" || by["tcp_rr_loaded_p99_ms"] != "tcp_rr_loaded_p99_ms_at_least" ||
		by["tcp_rr_censored_wait_ms"] != "tcp_rr_censored_wait_ms" || by["tcp_rr_idle_p50_ms"] != "" || by["value"] != "loaded_p50_ms_at_least" {
		t.Errorf("declared censored_by: %v", by)
	}
	// A flow beside without idle readings fails the sample, named.
	run.flows[1].idle = nil
	_, err = rrulMeasurement(run)
	parseWantErr(t, err, "netperf flow: idle latency: no readings")
}

// pingRun is 120 pings sent every 100 ms from 200.75, the first 100
// within iperf3's test [200.7, 210.7], each answered in 20 ms but those
// unanswered says; the probe stopped at 212.7.
func pingRun(unanswered func(seq int) bool) rrulRun {
	var ps []probeRTT
	for seq := 1; seq <= 120; seq++ {
		if !unanswered(seq) {
			ps = append(ps, probeRTT{At: 200.65 + 0.1*float64(seq), RTTMs: 20, Seq: seq})
		}
	}
	return rrulRun{flows: []flowRun{{probe: pingProbe, idle: []probeRTT{{At: 100, RTTMs: 10, Seq: 1}}, loaded: ps, sent: 120, stop: unixTime(212.7)}},
		start: unixTime(95), loadStart: unixTime(200), loadEnd: unixTime(210.7), done: unixTime(212.7),
		duration: 10 * time.Second}
}

// TestRRULPingLostIsLoss: on a lossy path a ping that was dropped is
// lost, not a delay. Seq 5 and 50 of 100 pings in iperf3's test [200.7,
// 210.7] go unanswered while later ones are answered (a FIFO path would
// have answered them first): they count in the loss, and the loaded
// quantiles are the answered probes' 20 ms, exact. Only probes still
// waiting when ping stopped (no later one answered) are censored.
func TestRRULPingLostIsLoss(t *testing.T) {
	measure := func(unanswered func(seq int) bool) Measurement {
		t.Helper()
		m, err := rrulMeasurement(pingRun(unanswered))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := measure(func(seq int) bool { return seq == 5 || seq == 50 })
	if m.Extra["probe_lost"] != 2 || !near(m.Extra["probe_loss_pct"], 2) || m.Extra["probe_unanswered"] != 2 ||
		m.Extra["probe_sent"] != 100 || m.Extra["loaded_probes"] != 98 {
		t.Errorf("2 of 100 lost: %+v", m.Extra)
	}
	for _, k := range []string{"loaded_p50_ms", "loaded_p90_ms", "loaded_p99_ms"} {
		if !near(m.Extra[k], 20) {
			t.Errorf("%s %v, want the answered probes' 20 ms", k, m.Extra[k])
		}
		if _, bound := m.Extra[results.AtLeastKey(k)]; bound {
			t.Errorf("%s marked a lower bound: a lost probe is no wait", k)
		}
	}
	for _, s := range m.Series {
		if s.Key == results.CensoredSeries("latency_loaded") {
			t.Errorf("lost probes drawn as censored waits: %v", s.V)
		}
	}
	if _, censored := m.Extra[results.CensoredWaitMs]; censored {
		t.Errorf("censored wait with no probe waiting at the end: %+v", m.Extra)
	}

	// Seq 5 lost; seq 96 on never answered, 96–100 sent in the test: still
	// waiting when ping stopped, censored from the test's end (2000 ms).
	m = measure(func(seq int) bool { return seq == 5 || seq >= 96 })
	if m.Extra["probe_lost"] != 1 || !near(m.Extra["probe_loss_pct"], 1) || m.Extra["probe_unanswered"] != 6 ||
		!near(m.Extra[results.CensoredWaitMs], 2000) || m.Extra["loaded_probes"] != 99 {
		t.Errorf("1 lost, 5 waiting: %+v", m.Extra)
	}
	if _, bound := m.Extra[results.AtLeastKey("loaded_p99_ms")]; !bound || !near(m.Extra["loaded_p99_ms"], 2000) {
		t.Errorf("p99 %v, want the 2000 ms wait, a lower bound: %+v", m.Extra["loaded_p99_ms"], m.Extra)
	}
}
