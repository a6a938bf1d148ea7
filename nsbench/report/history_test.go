package report

import (
	"fmt"
	"strings"
	"testing"

	goldenfile "github.com/twnsbench/twnsbench/internal/golden"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

var (
	hereEnv = results.FingerprintEnv{Kernel: "6.8.0-49-generic", CPUModel: "AMD EPYC 7B13", CoresOnline: 2,
		Tools: map[string]string{"iperf3": "iperf 3.16", "netperf": "Netperf version 2.7.0"}}
	thereEnv = results.FingerprintEnv{Kernel: "6.11.0-9-generic", CPUModel: "AMD EPYC 7B13", CoresOnline: 4,
		Tools: map[string]string{"iperf3": "iperf 3.16", "netperf": "Netperf version 2.7.0"}}
)

// historyLine is one cell of a run at day day of December 2026.
func historyLine(env results.FingerprintEnv, day int, instrument, metric, unit, better string, median float64) results.HistoryLine {
	return results.HistoryLine{
		Time: fmt.Sprintf("2026-12-%02dT10:00:00Z", day), Fingerprint: results.Fingerprint(env), Env: env,
		HistoryCell: results.HistoryCell{Transport: "tw", Condition: "lan", ConditionLabel: "LAN",
			Instrument: instrument, Metric: metric, Unit: unit, Better: better, N: 6, Median: median,
			Interval: results.Interval{Low: median * 0.98, High: median * 1.02, Level: 0.969}},
	}
}

// knownHistory: 8 runs here — goodput steady near 2.5 Gbit/s then 2.0 in
// the newest (a change point, worse), TCP_RR steady (no change), scp only
// in the last 3 runs (not tested), a p99 whose newest is a lower bound —
// and between them 2 runs of another machine whose goodput (9 Gbit/s)
// would move every baseline if it were compared.
func knownHistory() results.History {
	var h results.History
	goodput := []float64{2.50, 2.52, 2.48, 2.51, 2.49, 2.50, 2.53, 2.00}
	rr := []float64{9100, 9050, 9120, 9080, 9110, 9090, 9070, 9105}
	for i := range goodput {
		day := 1 + 2*i
		tw := map[string]string{"tw": "tw 2.1.0"}
		if i == len(goodput)-1 {
			tw = map[string]string{"tw": "tw 2.2.0"}
		}
		lines := []results.HistoryLine{
			historyLine(hereEnv, day, "iperf3-1", "value", "Gbit/s", results.BetterHigher, goodput[i]),
			historyLine(hereEnv, day, "tcp_rr", "value", "trans/s", results.BetterHigher, rr[i])}
		settings := "duration 10 s, warm-up 2 s, payload 5120 MiB, congestion cubic, order interleaved"
		if i < 2 { // the first two runs were quick ones: trends of their own
			settings = "duration 2 s, warm-up 1 s, payload 64 MiB, congestion cubic, order interleaved"
		}
		for _, l := range lines {
			l.Facts, l.Settings = tw, settings
			h.Lines = append(h.Lines, l)
		}
		p99 := historyLine(hereEnv, day, "tcp_rr", "p99_us", "µs", results.BetterLower, 180+float64(i))
		p99.Settings = settings
		if i == len(goodput)-1 {
			p99.Interval.LowerBounds = []string{results.BoundMedian}
		}
		h.Lines = append(h.Lines, p99)
		if i >= 5 {
			scp := historyLine(hereEnv, day, "scp", "value", "MB/s", results.BetterHigher, 300+float64(i))
			scp.Settings = settings
			h.Lines = append(h.Lines, scp)
		}
	}
	for _, day := range []int{4, 8} {
		h.Lines = append(h.Lines, historyLine(thereEnv, day, "iperf3-1", "value", "Gbit/s", results.BetterHigher, 9))
	}
	h.Unreadable = 1
	return h
}

// TestHistoryGolden: known lines in, the known trend and flags out.
func TestHistoryGolden(t *testing.T) {
	got := History(knownHistory(), "")
	golden(t, "history.golden.md", got)
	for _, want := range []string{
		"| tw · LAN · iperf3-1 · value | Gbit/s (higher is better) | 6 | ··▇█▇██▁ | 2.50 | 2.00 | −20.0 | **worse** (change point); since the run before: tw: tw 2.1.0 → tw 2.2.0 |",
		"| tw · LAN · tcp_rr · value | trans/s (higher is better) | 6 |",
		"| tw · LAN · iperf3-1 · value (duration 2 s, warm-up 1 s, payload 64 MiB, congestion cubic, order interleaved) | Gbit/s (higher is better) | 2 | ▁█······ | — | — (not in the newest run) | — | — |",
		"| ··█▂▇▄▁▆ | 9090 | 9105 | +0.2 | no change |",
		"— (2 earlier runs; 5 needed)",
		"≥ 187 | — | — (a lower bound) |",
		"Left out: 2 runs of 1 other environment,",
		"kernel 6.8.0-49-generic ≠ 6.11.0-9-generic and CPUs online 2 ≠ 4",
		"1 line of the history could not be read",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the trend report lacks %q", want)
		}
	}
}

// TestHistoryNeverMixesEnvironments: the report of the other
// environment shows its own 2 runs only, and says the 8 were left out.
func TestHistoryNeverMixesEnvironments(t *testing.T) {
	got := string(History(knownHistory(), results.Fingerprint(thereEnv)))
	for _, want := range []string{
		"2 runs of this environment, 2026-12-04T10:00:00Z to 2026-12-08T10:00:00Z.",
		"Left out: 8 runs of 1 other environment,",
		"| tw · LAN · iperf3-1 · value | Gbit/s (higher is better) | 2 | ▄▄ | — | 9.00 | — | — (1 earlier run; 5 needed) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the other environment's report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "2.50") || strings.Contains(got, "tcp_rr") {
		t.Errorf("the other environment's report shows this one's figures:\n%s", got)
	}
	if got := string(History(knownHistory(), "0000000000000000")); !strings.Contains(got, "No run of environment `0000000000000000`") ||
		!strings.Contains(got, "Left out: 10 runs of 2 other environments") {
		t.Errorf("an unknown fingerprint:\n%s", got)
	}
}

func TestSparkline(t *testing.T) {
	nan := func() float64 { var z float64; return z / z }()
	for _, c := range []struct {
		in   []float64
		want string
	}{
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8}, "▁▂▃▄▅▆▇█"},
		{[]float64{5, 5, 5}, "▄▄▄"},
		{[]float64{0, nan, 7}, "▁·█"},
	} {
		if got := sparkline(c.in); got != c.want {
			t.Errorf("sparkline(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

// Two runs that began in the same second are two runs, not one: the
// second's cell does not replace the first's.
func TestHistoryRunsOfOneSecond(t *testing.T) {
	var h results.History
	for _, g := range []float64{2.5, 2.6} {
		h.Lines = append(h.Lines, historyLine(hereEnv, 1, "iperf3-1", "value", "Gbit/s", results.BetterHigher, g))
	}
	got := string(History(h, ""))
	if !strings.Contains(got, "2 runs of this environment") || !strings.Contains(got, "| 2 | ▁█ |") {
		t.Errorf("two runs of one second:\n%s", got)
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got, *update, "go test ./nsbench/report/ -run TestHistoryGolden -update")
}
