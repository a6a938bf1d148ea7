package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// rrulDoc: Pure SSH probed by ICMP, tw (a port forwarder) by TCP_RR, on
// the WAN; tw's second run had a transaction outlast the test.
func rrulDoc() *results.Document {
	const icmp = "latency by ICMP echo every 100 ms (ping -i 0.1), each probe's round trip"
	const tcprr = "latency by netperf TCP_RR with interim results every 100 ms (-D 0.1), each interval's mean round trip"
	s := func(tr string, run int, method string, value float64, extra map[string]float64) results.Sample {
		return results.Sample{Transport: tr, Condition: "wan", Instrument: "rrul", Run: run, Value: value, Unit: "ms",
			Method: method, Extra: extra}
	}
	return &results.Document{
		SchemaVersion: results.SchemaVersion,
		Env:           results.Env{Runs: 2},
		Instruments: []results.Instrument{{Name: "rrul", Metrics: []results.Metric{
			{Key: "value", Unit: "ms"}, {Key: "loaded_p50_ms", Unit: "ms"}, {Key: "probe_unanswered"}}}},
		Transports: []results.Transport{{Name: "ssh", Label: "Pure SSH"}, {Name: "tw", Label: "SSH over tw"}},
		Conditions: []results.Condition{{Name: "wan", Label: "WAN (30 ms RTT, 0.1 % loss)"}},
		Samples: []results.Sample{
			s("ssh", 1, icmp, 3.0, map[string]float64{"idle_p50_ms": 30.1, "loaded_p50_ms": 33.1, "loaded_p90_ms": 40, "loaded_p99_ms": 52,
				"probe_sent": 100, "probe_unanswered": 2, "probe_loss_pct": 2, "down_gbps": 0.1, "up_gbps": 0.1}),
			s("ssh", 2, icmp, 4.0, map[string]float64{"idle_p50_ms": 30.1, "loaded_p50_ms": 34.1, "loaded_p90_ms": 41, "loaded_p99_ms": 55,
				"probe_sent": 100, "probe_unanswered": 0, "probe_loss_pct": 0, "down_gbps": 0.1, "up_gbps": 0.1}),
			s("tw", 1, tcprr, 150, map[string]float64{"idle_p50_ms": 31, "loaded_p50_ms": 181, "loaded_p90_ms": 300, "loaded_p99_ms": 900,
				"probe_sent": 40, "probe_unanswered": 0, "down_gbps": 0.03, "up_gbps": 0.03}),
			s("tw", 2, tcprr, 12369, map[string]float64{"idle_p50_ms": 31, "loaded_p50_ms": 12400, "loaded_p90_ms": 12400, "loaded_p99_ms": 12400,
				"probe_sent": 1, "probe_unanswered": 1, "censored_wait_ms": 12400, "down_gbps": 0.02, "up_gbps": 0.02}),
		},
	}
}

// TestRRULSection: each probe has its own table (never one column for
// ICMP and TCP_RR), unanswered probes sit beside the loaded quantiles, a
// censored cell shows lower bounds, and each row has its grade.
func TestRRULSection(t *testing.T) {
	md := string(Markdown(rrulDoc()))
	for _, want := range []string{
		"### Latency under load (RRUL) — WAN (30 ms RTT, 0.1 % loss)",
		"| Transport (probe: ICMP) | Idle p50 (ms) | Loaded p50 / p90 / p99 (ms) | Unanswered under load | Added latency (ms) | Grade (DSLReports' thresholds) |",
		"| Pure SSH | 30.10 | 33.60 / 40.50 / 53.50 | 2 of 200 (1.0 %) | 3.50 (3.00–4.00) | A+ | 0.10 / 0.10 |",
		"| Transport (probe: TCP_RR) |",
		"| SSH over tw | 31.00 | ≥ 6290.50 / ≥ 6350.00 / ≥ 6650.00 | 1 of 41 (2.4 %), censored: waited 12.4 s | ≥ 6259.50 (150.00–≥ 12369.00) | F | 0.03 / 0.03 |",
		"probe: TCP_RR — latency by netperf TCP_RR",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if i, j := strings.Index(md, "(probe: ICMP)"), strings.Index(md, "(probe: TCP_RR)"); i < 0 || j < 0 ||
		strings.Contains(md[i:j], "SSH over tw") || strings.Contains(md[j:], "| Pure SSH |") {
		t.Error("an ICMP-probed and a TCP_RR-probed row share a table")
	}
	// The generic table no longer mixes the probes in one column.
	if strings.Contains(md, "| wan | SSH over tw | rrul |") || strings.Contains(md, "| wan | Pure SSH | rrul |") {
		t.Error("rrul's metrics are in More metrics, ICMP and TCP_RR in one column")
	}
}

// TestRRULGradeSaysWhatItGrades: DSLReports' scale grades the mean
// increase averaged over a download-only and an upload-only phase; rrul
// grades the median of the runs' p50 increase under two-way load. The
// report names the statistic graded and says it is not DSLReports' grade.
func TestRRULGradeSaysWhatItGrades(t *testing.T) {
	md := string(Markdown(rrulDoc()))
	for _, want := range []string{
		"Grade: DSLReports' bufferbloat thresholds (A+ < 5 ms, A < 30, B < 60, C < 200, D < 400, F ≥ 400) applied to the added latency above, " +
			"the median of the runs' p50 increase under two-way load.",
		"It is not DSLReports' grade, which takes the mean increase averaged over a download-only and an upload-only phase",
		"| Grade (DSLReports' thresholds) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "DSLReports' bufferbloat scale of the added latency") {
		t.Error("the report calls the grade DSLReports' own")
	}
}

func TestBufferbloatGrade(t *testing.T) {
	for ms, want := range map[float64]string{0: "A+", 4.99: "A+", 5: "A", 29.9: "A", 30: "B", 59: "B", 60: "C", 199: "C", 200: "D", 399: "D", 400: "F", 12400: "F"} {
		if got := bufferbloatGrade(ms); got != want {
			t.Errorf("%v ms: grade %s, want %s", ms, got, want)
		}
	}
}

// TestMetricsChartBoundsAndProbes: in bench-metrics.svg a censored median
// reads "≥" (tw's second run outlasted its test) and the footer says what
// that means; rrul's latency panels hold one probe's transports each
// (ICMP and TCP_RR round trips are different measures), its other
// metrics stay one panel.
func TestMetricsChartBoundsAndProbes(t *testing.T) {
	root := parseSVG(t, MetricsChart(rrulDoc(), Light))
	panels := panelsByID(root)
	for id, want := range map[string]string{
		"panel-wan-rrul-value-ICMP": "ssh", "panel-wan-rrul-value-TCP_RR": "tw",
		"panel-wan-rrul-loaded_p50_ms-ICMP": "ssh", "panel-wan-rrul-loaded_p50_ms-TCP_RR": "tw",
		"panel-wan-rrul-probe_unanswered": "ssh,tw",
	} {
		if got := strings.Join(barTransports(panels[id]), ","); got != want {
			t.Errorf("%s: bars %q, want %q", id, got, want)
		}
	}
	if _, mixed := panels["panel-wan-rrul-value"]; mixed {
		t.Error("one latency panel holds both probes")
	}
	tcprr := strings.Join(panels["panel-wan-rrul-value-TCP_RR"].texts(), "|")
	if !strings.Contains(tcprr, "≥ 6259.5") || !strings.Contains(tcprr, "(probe: TCP_RR)") {
		t.Errorf("tw's censored median is not drawn as a bound: %q", tcprr)
	}
	if icmp := strings.Join(panels["panel-wan-rrul-value-ICMP"].texts(), "|"); strings.Contains(icmp, "≥") {
		t.Errorf("an exact median drawn as a bound: %q", icmp)
	}
	if texts := root.texts(); !strings.Contains(texts[len(texts)-1], "≥: a lower bound") {
		t.Errorf("footer %q does not explain ≥", texts[len(texts)-1])
	}
}

// TestRRULRowBoundsPerFigure: one ping lost far above the median (the
// sample's p99 a bound, its p50 exact, as the instrument marks them)
// makes the p99 "≥" and leaves the p50, the added latency and the grade
// exact.
func TestRRULRowBoundsPerFigure(t *testing.T) {
	const icmp = "latency by ICMP echo every 100 ms (ping -i 0.1), each probe's round trip"
	censoredBy := func(key string) string { return results.AtLeastKey(key) }
	d := &results.Document{SchemaVersion: results.SchemaVersion, Env: results.Env{Runs: 2},
		Instruments: []results.Instrument{{Name: "rrul", Metrics: []results.Metric{
			{Key: "value", Unit: "ms", CensoredBy: censoredBy("loaded_p50_ms")},
			{Key: "loaded_p50_ms", Unit: "ms", CensoredBy: censoredBy("loaded_p50_ms")},
			{Key: "loaded_p90_ms", Unit: "ms", CensoredBy: censoredBy("loaded_p90_ms")},
			{Key: "loaded_p99_ms", Unit: "ms", CensoredBy: censoredBy("loaded_p99_ms")}}}},
		Transports: []results.Transport{{Name: "ssh", Label: "Pure SSH"}},
		Conditions: []results.Condition{{Name: "wan", Label: "WAN"}},
		Samples: []results.Sample{
			{Transport: "ssh", Condition: "wan", Instrument: "rrul", Run: 1, Value: 3, Method: icmp, Extra: map[string]float64{
				"idle_p50_ms": 30, "loaded_p50_ms": 33, "loaded_p90_ms": 40, "loaded_p99_ms": 60,
				"probe_sent": 100, "probe_unanswered": 0, "down_gbps": 0.1, "up_gbps": 0.1}},
			{Transport: "ssh", Condition: "wan", Instrument: "rrul", Run: 2, Value: 4, Method: icmp, Extra: map[string]float64{
				"idle_p50_ms": 30, "loaded_p50_ms": 34, "loaded_p90_ms": 41, "loaded_p99_ms": 1900,
				"probe_sent": 100, "probe_unanswered": 1, "censored_wait_ms": 2000, censoredBy("loaded_p99_ms"): 1,
				"down_gbps": 0.1, "up_gbps": 0.1}},
		}}
	md := string(Markdown(d))
	if want := "| Pure SSH | 30.00 | 33.50 / 40.50 / ≥ 980.00 | 1 of 200 (0.5 %), censored: waited 2.0 s | 3.50 (3.00–4.00) | A+ |"; !strings.Contains(md, want) {
		t.Errorf("report lacks %q:\n%s", want, md)
	}
}

// TestRRULLostApartFromWaiting: where the samples count lost pings apart
// (probe_lost), the unanswered cell says how many were lost and how many
// were still waiting at the end (censored): only those are in the latency
// figures, so a lossy path's p99 stays exact.
func TestRRULLostApartFromWaiting(t *testing.T) {
	const icmp = "latency by ICMP echo every 100 ms (ping -i 0.1), each probe's round trip"
	s := func(run int, extra map[string]float64) results.Sample {
		return results.Sample{Transport: "ssh", Condition: "wan", Instrument: "rrul", Run: run, Value: 3, Unit: "ms", Method: icmp, Extra: extra}
	}
	d := &results.Document{SchemaVersion: results.SchemaVersion, Env: results.Env{Runs: 2},
		Instruments: []results.Instrument{{Name: "rrul", Metrics: []results.Metric{{Key: "value", Unit: "ms"}}}},
		Transports:  []results.Transport{{Name: "ssh", Label: "Pure SSH"}},
		Conditions:  []results.Condition{{Name: "wan", Label: "WAN"}},
		Samples: []results.Sample{
			s(1, map[string]float64{"idle_p50_ms": 30, "loaded_p50_ms": 33, "loaded_p90_ms": 40, "loaded_p99_ms": 50,
				"probe_sent": 100, "probe_unanswered": 2, "probe_lost": 2, "probe_loss_pct": 2}),
			s(2, map[string]float64{"idle_p50_ms": 30, "loaded_p50_ms": 33, "loaded_p90_ms": 40, "loaded_p99_ms": 50,
				"probe_sent": 100, "probe_unanswered": 1, "probe_lost": 0, "probe_loss_pct": 0, "censored_wait_ms": 2000}),
		}}
	md := string(Markdown(d))
	if want := "| 3 of 200: 2 lost (1.0 %); 1 still waiting at the end, censored: waited 2.0 s |"; !strings.Contains(md, want) {
		t.Errorf("report lacks %q:\n%s", want, md)
	}
	if !strings.Contains(md, "A ping unanswered while a later one was answered is lost") {
		t.Error("the section does not say what is lost and what is censored")
	}
}

// TestRRULRangeBoundsAndPlannedRuns: under --runs auto each cell's n is
// checked against the runs that cell planned, not the pilot's Env.Runs:
// a censored pilot planned --max-runs (4) for both transports; ssh ran
// all 4 (no n=), tw 3 (n=3 in the table and on its bar). And "≥" marks
// each figure that is a lower bound, not the whole "median (min–max)":
// the median and the max a censored reading reaches, the exact min bare.
func TestRRULRangeBoundsAndPlannedRuns(t *testing.T) {
	const tcprr = "latency by netperf TCP_RR with interim results every 100 ms (-D -0.1), each interval's mean round trip"
	at := results.AtLeastKey("loaded_p50_ms")
	s := func(tr string, run int, value float64, censored bool) results.Sample {
		x := map[string]float64{"idle_p50_ms": 30, "loaded_p50_ms": 30 + value, "probe_sent": 100, "probe_unanswered": 0}
		if censored {
			x[at], x["probe_unanswered"], x[results.CensoredWaitMs] = 1, 1, 30+value
		}
		return results.Sample{Transport: tr, Condition: "wan", Instrument: "rrul", Run: run, Value: value, Unit: "ms", Method: tcprr, Extra: x}
	}
	d := &results.Document{SchemaVersion: results.SchemaVersion,
		Env: results.Env{Runs: 2, RunsAuto: &results.RunsAuto{MaxRuns: 4, Precision: 0.05}},
		Instruments: []results.Instrument{{Name: "rrul", Metrics: []results.Metric{
			{Key: "value", Unit: "ms", CensoredBy: at, Difference: true}, {Key: "loaded_p50_ms", Unit: "ms", CensoredBy: at}}}},
		Transports: []results.Transport{{Name: "ssh", Label: "Pure SSH"}, {Name: "tw", Label: "tw"}},
		Conditions: []results.Condition{{Name: "wan", Label: "WAN"}},
		Samples: []results.Sample{
			s("ssh", 1, 100, true), s("ssh", 2, 10, false), s("ssh", 3, 12, false), s("ssh", 4, 14, false),
			s("tw", 1, 20, false), s("tw", 2, 5, true), s("tw", 3, 30, false),
		}}
	md := string(Markdown(d))
	for _, want := range []string{
		"| 13.00 (10.00–≥ 100.00) |",        // ssh: 4 of 4 planned; the censored 100 above the median leaves it exact
		"| ≥ 20.00 (≥ 5.00–≥ 30.00; n=3) |", // tw: 3 of 4; the censored 5 is the min, below the median
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	panels := panelsByID(parseSVG(t, MetricsChart(d, Light)))
	texts := strings.Join(panels["panel-wan-rrul-value"].texts(), "|")
	if !strings.Contains(texts, "≥ 20.0 (n=3)") || strings.Contains(texts, "13.0 (n=") {
		t.Errorf("bar labels %q: want tw's n=3 of 4 planned, none on ssh's 4", texts)
	}
}
