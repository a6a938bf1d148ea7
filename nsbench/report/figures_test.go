package report

import (
	"math"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// seriesDoc is a synthetic run whose samples carry series as the Series
// contract describes them: iperf3 per-interval throughput and an rrul
// instrument with throughput down/up and idle/loaded latency probes, plus
// TCP_RR with its percentiles. Values are made up but deterministic; the
// run of each cell whose value is the median is run 3 (iperf3-1) or run 1
// (rrul), so a test can tell which run a panel draws.
func seriesDoc() *results.Document {
	const payload = 64 << 20
	transports := []string{"ssh", "wireguard", "tw"}
	scale := map[string]float64{"ssh": 1, "wireguard": 0.8, "tw": 0.3}
	conds := []results.Condition{
		{Name: "lan", Label: "LAN (0 ms RTT, no loss)", ScpPayloadBytes: payload},
		{Name: "wan", Label: "WAN (40 ms RTT, 0.2 % loss)", ScpPayloadBytes: payload,
			Profile: &results.Profile{Spec: "40ms:0.2%", RTTMs: 40, LossPct: 0.2}},
	}
	ramp := func(n int, step float64, f func(i int) float64) results.Series {
		var s results.Series
		for i := 0; i < n; i++ {
			s.T = append(s.T, float64(i+1)*step)
			s.V = append(s.V, f(i))
		}
		return s
	}
	var samples []results.Sample
	for _, c := range conds {
		base := 0.0
		if c.Name == "wan" {
			base = 40
		}
		for _, t := range transports {
			k := scale[t]
			// iperf3-1: runs valued 3k, 1k, 2k; the median is run 3's 2k.
			for run, gb := range []float64{3 * k, 1 * k, 2 * k} {
				se := ramp(10, 1, func(i int) float64 { return gb * (0.9 + 0.02*float64(i%5)) })
				se.Key, se.Unit = "throughput", "Gbit/s"
				samples = append(samples, results.Sample{Transport: t, Condition: c.Name, Instrument: instIperf1,
					Run: run + 1, WallSec: 10, Value: gb, Unit: "Gbit/s", Series: []results.Series{se}})
			}
			// TCP_RR: percentiles only.
			for run := 1; run <= 3; run++ {
				p50 := (base*1000 + 30/k) + float64(run)
				samples = append(samples, results.Sample{Transport: t, Condition: c.Name, Instrument: instTCPRR,
					Run: run, WallSec: 10, Value: 1e6 / p50, Unit: "trans/s", P50Us: f64(p50), P99Us: f64(p50 * 2.5)})
			}
			if t == "tw" && c.Name == "wan" {
				continue // no rrul there: its panels must name the gap
			}
			// rrul: runs valued 2k, 1k, 3k down; the median is run 1.
			for run, down := range []float64{2 * k, 1 * k, 3 * k} {
				th := ramp(20, 0.5, func(i int) float64 { return down * (1 - math.Exp(-float64(i+1))) })
				th.Key, th.Unit = "throughput", "Gbit/s"
				up := ramp(20, 0.5, func(i int) float64 { return down / 10 })
				up.Key, up.Unit = "throughput_up", "Gbit/s"
				idle := ramp(10, 0.2, func(i int) float64 { return base + 0.1 + 0.01*float64(i) })
				idle.Key, idle.Unit = "latency_idle", "ms"
				loaded := ramp(40, 0.25, func(i int) float64 { return base + (1+float64(i%7))/k })
				loaded.Key, loaded.Unit = "latency_loaded", "ms"
				samples = append(samples, results.Sample{Transport: t, Condition: c.Name, Instrument: "rrul",
					Run: run + 1, WallSec: 10, Value: down, Unit: "Gbit/s",
					Extra:  map[string]float64{"throughput_up": down / 10, "latency_loaded_p99_ms": base + 7/k, "latency_increase_ms": 6 / k},
					Series: []results.Series{th, up, idle, loaded}})
			}
		}
	}
	d := &results.Document{
		SchemaVersion: results.SchemaVersion,
		Complete:      true,
		Env: results.Env{Generated: "2026-12-01T10:00:00Z", CPUModel: "Test CPU", Cores: 2, Kernel: "6.1.0-test",
			WAN: "40 ms RTT, 0.2 % loss", Runs: 3, SizeBytes: payload, Harness: "twnsbench test"},
		Transports: []results.Transport{
			{Name: "ssh", Label: "Pure SSH"}, {Name: "wireguard", Label: "SSH over WireGuard"}, {Name: "tw", Label: "SSH over Tunnel Whisperer"}},
		Instruments: []results.Instrument{
			{Name: instIperf1, Tool: "iperf3", Metrics: []results.Metric{{Key: "value", Label: "throughput", Unit: "Gbit/s", Better: results.BetterHigher}}},
			{Name: instTCPRR, Tool: "netperf", Metrics: []results.Metric{
				{Key: "value", Label: "transactions", Unit: "trans/s", Better: results.BetterHigher},
				{Key: "p50_us", Label: "p50 latency", Unit: "µs", Better: results.BetterLower},
				{Key: "p99_us", Label: "p99 latency", Unit: "µs", Better: results.BetterLower}}},
			{Name: "rrul", Tool: "flent-like", Metrics: []results.Metric{
				{Key: "value", Label: "throughput down", Unit: "Gbit/s", Better: results.BetterHigher},
				{Key: "throughput_up", Label: "throughput up", Unit: "Gbit/s", Better: results.BetterHigher},
				{Key: "latency_loaded_p99_ms", Label: "loaded latency p99", Unit: "ms", Better: results.BetterLower},
				{Key: "latency_increase_ms", Label: "latency increase under load", Unit: "ms", Better: results.BetterLower}}},
		},
		Conditions: conds,
		Samples:    samples,
		Skipped:    []results.Skipped{{Transport: "tw", Condition: "wan", Instrument: "rrul", Reason: "test: no rrul over tw on the WAN"}},
	}
	d.Cells = results.Cells(d)
	return d
}

// Every declared metric with a value gets a panel per condition, titled
// with its declared label and unit; none is invented for a metric without
// values.
func TestMetricsChartEveryDeclaredMetric(t *testing.T) {
	d := seriesDoc()
	root := parseSVG(t, MetricsChart(d, Light))
	panels := panelsByID(root)
	for _, cond := range []string{"lan", "wan"} {
		for _, in := range d.Instruments {
			for _, m := range in.Metrics {
				id := "panel-" + idSafe(cond+"-"+in.Name+"-"+m.Key)
				p, ok := panels[id]
				if !ok {
					t.Errorf("no panel %s", id)
					continue
				}
				texts := strings.Join(p.texts(), "\n")
				if !strings.Contains(texts, in.Name+": "+m.Label) || !strings.Contains(texts, m.Unit) {
					t.Errorf("%s: title/unit missing in %q", id, texts)
				}
			}
		}
	}
	if want := 2 * (1 + 3 + 4); len(panels) != want {
		t.Errorf("%d panels, want %d", len(panels), want)
	}
	// rrul under the WAN was not measured over tw: its bar says so.
	got := barTransports(panels["panel-wan-rrul-value"])
	if strings.Join(got, ",") != "ssh,wireguard" {
		t.Errorf("wan rrul bars %v, want ssh and wireguard only", got)
	}
	if MetricsChart(&results.Document{Conditions: []results.Condition{{Name: "lan"}}}, Light) != nil {
		t.Error("a document without values got a metrics chart")
	}
}

// The reference document declares nothing: it is drawn with what
// MetricValues reads it with, TCP_RR's percentiles included.
func TestMetricsChartReference(t *testing.T) {
	panels := panelsByID(parseSVG(t, MetricsChart(referenceDoc(t), Dark)))
	for _, id := range []string{"panel-lan-iperf3-1-value", "panel-lan-tcp_rr-p99_us", "panel-wan-scp-value"} {
		if _, ok := panels[id]; !ok {
			t.Errorf("reference metrics chart has no %s", id)
		}
	}
}

// Each panel draws the median's run, names it, and shares its axes with
// the rest of its row; every series key gets its section.
func TestTimeSeriesChart(t *testing.T) {
	d := seriesDoc()
	root := parseSVG(t, TimeSeriesChart(d, Light))
	sections := root.all("ts-section")
	// lan: iperf3-1 throughput, rrul ×4; wan: the same.
	if len(sections) != 10 {
		t.Fatalf("%d sections, want 10", len(sections))
	}
	first := sections[0]
	if h := first.texts()[0]; h != "iperf3-1: throughput (Gbit/s) — LAN (0 ms RTT, no loss)" {
		t.Errorf("first section heading %q", h)
	}
	panels := first.all("panel ts-panel")
	if len(panels) != 3 {
		t.Fatalf("iperf3-1 lan: %d panels, want one per transport", len(panels))
	}
	var ticks string
	for i, p := range panels {
		texts := p.texts()
		if !strings.HasPrefix(texts[1], "run 3 (median of 3) · 10 points") {
			t.Errorf("panel %d note %q, want run 3", i, texts[1])
		}
		got := strings.Join(texts[2:], " ")
		if i == 0 {
			ticks = got
		} else if got != ticks {
			t.Errorf("panel %d axes %q differ from the first panel's %q", i, got, ticks)
		}
		if pts := p.all("point"); len(pts) != 10 {
			t.Errorf("panel %d: %d points, want the 10 intervals", i, len(pts))
		}
	}
	var rrulWAN svgNode
	for _, s := range sections {
		if strings.HasPrefix(s.texts()[0], "rrul: latency_loaded (ms) — WAN") {
			rrulWAN = s
		}
	}
	if n := len(rrulWAN.all("panel ts-panel")); n != 2 {
		t.Errorf("rrul wan: %d panels, want 2 (tw has no rrul there)", n)
	}
	if !strings.Contains(strings.Join(rrulWAN.texts(), " "), "run 1 (median of 3)") {
		t.Error("rrul wan: the median's run (1) is not the one drawn")
	}
}

// Without series there is no time series chart (the report says so),
// and the latency CDF is drawn from TCP_RR's percentiles alone, as points.
func TestFiguresWithoutSeries(t *testing.T) {
	d := referenceDoc(t)
	if TimeSeriesChart(d, Light) != nil {
		t.Error("the reference has no series, yet a time series chart was drawn")
	}
	root := parseSVG(t, LatencyCDFChart(d, Light))
	panels := root.all("panel cdf-panel")
	if len(panels) != 2 {
		t.Fatalf("%d CDF panels, want tcp_rr on lan and wan", len(panels))
	}
	for _, p := range panels {
		if len(p.all("cdf")) != 0 {
			t.Error("a curve was drawn from percentiles alone")
		}
		if len(p.all("quantile")) == 0 {
			t.Error("no percentile points")
		}
	}
}

// The latency CDF: one panel per latency series and condition with every
// transport's probes pooled over its runs, and TCP_RR's p50/p99 per run as
// points at 0.50 and 0.99.
func TestLatencyCDFChart(t *testing.T) {
	d := seriesDoc()
	root := parseSVG(t, LatencyCDFChart(d, Light))
	panels := root.all("panel cdf-panel")
	var ids []string
	for _, p := range panels {
		ids = append(ids, p.attr("id"))
	}
	want := "cdf-0-rrul-latency_idle-lan cdf-1-rrul-latency_loaded-lan cdf-2-tcp_rr--lan " +
		"cdf-3-rrul-latency_idle-wan cdf-4-rrul-latency_loaded-wan cdf-5-tcp_rr--wan"
	if got := strings.Join(ids, " "); got != want {
		t.Fatalf("CDF panels %q, want %q", got, want)
	}
	loaded := panels[1]
	if n := len(loaded.all("cdf")); n != 3 {
		t.Errorf("lan loaded latency: %d curves, want one per transport", n)
	}
	if !strings.Contains(strings.Join(loaded.texts(), "|"), "Pure SSH (3 runs, 120 probes)") {
		t.Errorf("legend does not count the pooled probes: %q", loaded.texts())
	}
	rr := panels[2]
	if n := len(rr.all("quantile")); n != 3*3*2 {
		t.Errorf("tcp_rr: %d points, want 2 per run", n)
	}
	if len(rr.all("cdf")) != 0 {
		t.Error("tcp_rr: a curve between percentiles was invented")
	}
	if !strings.Contains(strings.Join(rr.texts(), "|"), "no curve") {
		t.Error("tcp_rr panel does not say what it is drawn from")
	}
	if n := len(panels[4].all("cdf")); n != 2 {
		t.Errorf("wan loaded latency: %d curves, want 2", n)
	}
}

func TestMedianRun(t *testing.T) {
	s := func(run int, v float64, has bool) results.Sample {
		x := results.Sample{Run: run, Value: v}
		if has {
			x.Series = []results.Series{{Key: "k", T: []float64{1}, V: []float64{v}}}
		}
		return x
	}
	for _, c := range []struct {
		ss   []results.Sample
		want int
	}{
		{[]results.Sample{s(1, 5, true), s(2, 1, true), s(3, 3, true)}, 3},
		{[]results.Sample{s(1, 5, true), s(2, 1, true), s(3, 3, true), s(4, 4, true)}, 3}, // lower median
		{[]results.Sample{s(1, 2, true), s(2, 2, true), s(3, 2, true)}, 2},
		{[]results.Sample{s(1, 5, false), s(2, 1, true), s(3, 3, true)}, 2}, // only runs with the series count
	} {
		r, ok := medianRun(c.ss, "k")
		if !ok || r.sample.Run != c.want {
			t.Errorf("medianRun = run %d (%v), want %d", r.sample.Run, ok, c.want)
		}
	}
	if _, ok := medianRun([]results.Sample{s(1, 1, false)}, "k"); ok {
		t.Error("a cell without the series gave a run")
	}
}

// Past the palette's five colours, a transport's curve and points repeat a
// colour with another dash and marker: seven transports stay apart.
func TestLatencyCDFManyTransports(t *testing.T) {
	d := &results.Document{SchemaVersion: results.SchemaVersion, Env: results.Env{Runs: 1},
		Conditions: []results.Condition{{Name: "lan"}}}
	for i := 0; i < 7; i++ {
		name := string(rune('a' + i))
		d.Transports = append(d.Transports, results.Transport{Name: name, Label: "T " + name})
		d.Samples = append(d.Samples, results.Sample{Transport: name, Condition: "lan", Instrument: "rrul", Run: 1,
			Series: []results.Series{{Key: "latency_loaded", Unit: "ms", T: []float64{1, 2}, V: []float64{float64(i + 1), float64(i + 2)}}}},
			results.Sample{Transport: name, Condition: "lan", Instrument: instTCPRR, Run: 1, P50Us: f64(10), P99Us: f64(20)})
	}
	root := parseSVG(t, LatencyCDFChart(d, Light))
	curves := root.all("cdf")
	if len(curves) != 7 {
		t.Fatalf("%d curves, want 7", len(curves))
	}
	if curves[0].attr("stroke") != curves[5].attr("stroke") || curves[0].attr("stroke-dasharray") == curves[5].attr("stroke-dasharray") {
		t.Errorf("transports 1 and 6 share colour %s and dash %q/%q: want the same colour, another dash",
			curves[0].attr("stroke"), curves[0].attr("stroke-dasharray"), curves[5].attr("stroke-dasharray"))
	}
	marks := root.all("quantile")
	if len(marks) != 14 || marks[0].XMLName.Local != "circle" || marks[10].XMLName.Local == "circle" {
		t.Errorf("%d markers; the 6th transport's is a %s, want other than the 1st's circle", len(marks), marks[10].XMLName.Local)
	}
}
