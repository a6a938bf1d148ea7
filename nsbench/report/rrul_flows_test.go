package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// rrulFlowsDoc is rrulDoc with Pure SSH probed by two flows at once: ICMP
// (its headline, unprefixed) and TCP_RR beside it (tcp_rr_ keys), the
// second run's TCP_RR transaction censored at 3 s; tw by TCP_RR alone.
func rrulFlowsDoc() *results.Document {
	d := rrulDoc()
	at := results.AtLeastKey
	d.Instruments[0].Metrics = append(d.Instruments[0].Metrics,
		results.Metric{Key: "tcp_rr_value", Unit: "ms", CensoredBy: at("tcp_rr_loaded_p50_ms"), Difference: true},
		results.Metric{Key: "tcp_rr_loaded_p50_ms", Unit: "ms", CensoredBy: at("tcp_rr_loaded_p50_ms")},
		results.Metric{Key: "tcp_rr_loaded_p99_ms", Unit: "ms", CensoredBy: at("tcp_rr_loaded_p99_ms")})
	beside := []map[string]float64{
		{"tcp_rr_value": 20, "tcp_rr_idle_p50_ms": 30.5, "tcp_rr_loaded_p50_ms": 50.5, "tcp_rr_loaded_p90_ms": 60, "tcp_rr_loaded_p99_ms": 70,
			"tcp_rr_probe_sent": 3000, "tcp_rr_probe_unanswered": 0},
		{"tcp_rr_value": 22, "tcp_rr_idle_p50_ms": 30.5, "tcp_rr_loaded_p50_ms": 52.5, "tcp_rr_loaded_p90_ms": 64, "tcp_rr_loaded_p99_ms": 1500,
			"tcp_rr_probe_sent": 2900, "tcp_rr_probe_unanswered": 1, "tcp_rr_censored_wait_ms": 3000, at("tcp_rr_loaded_p99_ms"): 1},
	}
	for i := range d.Samples {
		s := &d.Samples[i]
		if s.Transport != "ssh" {
			continue
		}
		s.Method += "; beside it, at the same time, latency by netperf TCP_RR with interim results every 100 ms (-D 0.1) (its figures under tcp_rr_ keys)"
		for k, v := range beside[s.Run-1] {
			s.Extra[k] = v
		}
		s.Series = []results.Series{
			{Key: "latency_loaded", Unit: "ms", T: []float64{1, 2}, V: []float64{33, 34}},
			{Key: "tcp_rr_latency_loaded", Unit: "ms", T: []float64{1, 2}, V: []float64{50, 51}},
		}
		if s.Run == 2 {
			s.Series = append(s.Series, results.Series{Key: "tcp_rr_latency_loaded_censored", Unit: "ms", T: []float64{3}, V: []float64{3000}})
		}
	}
	for i := range d.Samples {
		if d.Samples[i].Transport == "tw" {
			d.Samples[i].Series = []results.Series{{Key: "latency_loaded", Unit: "ms", T: []float64{1}, V: []float64{181}}}
		}
	}
	return d
}

// TestRRULFlowsSection: the TCP_RR flow probed beside ICMP is a row of the
// TCP_RR table (with tw's, probed by TCP_RR alone: the same measure), from
// its own figures, bounds and unanswered transactions; the ICMP table
// keeps the ICMP flow's figures; neither table holds the other probe's.
func TestRRULFlowsSection(t *testing.T) {
	md := string(Markdown(rrulFlowsDoc()))
	i, j := strings.Index(md, "(probe: ICMP)"), strings.Index(md, "(probe: TCP_RR)")
	if i < 0 || j < i {
		t.Fatalf("no ICMP table before a TCP_RR one:\n%s", md)
	}
	icmp, tcprr := md[i:j], md[j:]
	if want := "| Pure SSH | 30.10 | 33.60 / 40.50 / 53.50 | 2 of 200 (1.0 %) | 3.50 (3.00–4.00) | A+ | 0.10 / 0.10 |"; !strings.Contains(icmp, want) {
		t.Errorf("ICMP table lacks %q:\n%s", want, icmp)
	}
	for _, want := range []string{
		"| Pure SSH (TCP_RR beside ICMP) | 30.50 | 51.50 / 62.00 / ≥ 785.00 | 1 of 5900 (0.0 %), censored: waited 3.0 s | 21.00 (20.00–22.00) | A | 0.10 / 0.10 |",
		"| SSH over tw | 31.00 | ≥ 6290.50",
		"beside ICMP: TCP_RR probed at the same time as the ICMP flow, through the same path and load",
	} {
		if !strings.Contains(tcprr, want) {
			t.Errorf("TCP_RR table lacks %q:\n%s", want, tcprr)
		}
	}
	if strings.Contains(icmp, "beside ICMP") || strings.Contains(icmp, "SSH over tw") {
		t.Errorf("the ICMP table holds a TCP_RR row:\n%s", icmp)
	}
}

// TestRRULFlowsCharts: in bench-metrics.svg a TCP_RR figure beside ICMP
// is a TCP_RR panel of its own (never an ICMP one), and in the latency
// CDFs the TCP_RR flow beside ICMP is a TCP_RR panel, its censored wait a
// tick; the ICMP panel holds the ICMP flow alone.
func TestRRULFlowsCharts(t *testing.T) {
	d := rrulFlowsDoc()
	panels := panelsByID(parseSVG(t, MetricsChart(d, Light)))
	for id, want := range map[string]string{
		"panel-wan-rrul-tcp_rr_loaded_p50_ms-TCP_RR": "ssh",
		"panel-wan-rrul-tcp_rr_value-TCP_RR":         "ssh",
		"panel-wan-rrul-loaded_p50_ms-ICMP":          "ssh", "panel-wan-rrul-loaded_p50_ms-TCP_RR": "tw",
	} {
		p, ok := panels[id]
		if got := strings.Join(barTransports(p), ","); !ok || got != want {
			t.Errorf("%s: bars %q (present %v), want %q", id, got, ok, want)
		}
	}
	for id := range panels {
		if strings.Contains(id, "tcp_rr_") && !strings.HasSuffix(id, "-TCP_RR") {
			t.Errorf("panel %s: a TCP_RR figure on a panel not named TCP_RR", id)
		}
	}
	if p99 := strings.Join(panels["panel-wan-rrul-tcp_rr_loaded_p99_ms-TCP_RR"].texts(), "|"); !strings.Contains(p99, "≥ 785") {
		t.Errorf("the censored TCP_RR p99 is not drawn as a bound: %q", p99)
	}
	root := parseSVG(t, LatencyCDFChart(d, Light))
	lines := map[string]string{}
	ticks := map[string]int{}
	for _, p := range root.all("panel cdf-panel") {
		var ts []string
		for _, l := range p.all("cdf-line") {
			ts = append(ts, l.attr("data-transport"))
		}
		lines[p.attr("id")] = strings.Join(ts, ",")
		ticks[p.attr("id")] = len(p.all("censored"))
	}
	for id, want := range map[string]string{
		"cdf-0-rrul-latency_loaded-ICMP-wan": "ssh", "cdf-1-rrul-latency_loaded-TCP_RR-wan": "tw",
		"cdf-2-rrul-tcp_rr_latency_loaded-TCP_RR-wan": "ssh",
	} {
		if lines[id] != want {
			t.Errorf("CDF %s: lines %q, want %q (all: %v)", id, lines[id], want, lines)
		}
	}
	if n := ticks["cdf-2-rrul-tcp_rr_latency_loaded-TCP_RR-wan"]; n != 1 {
		t.Errorf("TCP_RR beside ICMP: %d censored ticks, want 1", n)
	}
}

// TestRRULFlowsTimeSeriesMedianRun: a series of the TCP_RR flow beside
// ICMP is drawn from the run whose TCP_RR increase is the median (run 3,
// 20 ms, of 30, 10, 20), not the run whose headline ICMP increase is
// (run 2, of 1, 2, 3).
func TestRRULFlowsTimeSeriesMedianRun(t *testing.T) {
	d := &results.Document{SchemaVersion: results.SchemaVersion, Env: results.Env{Runs: 3},
		Transports: []results.Transport{{Name: "ssh", Label: "Pure SSH"}},
		Conditions: []results.Condition{{Name: "wan"}}}
	for i, rr := range []float64{30, 10, 20} {
		d.Samples = append(d.Samples, results.Sample{Transport: "ssh", Condition: "wan", Instrument: "rrul", Run: i + 1, Value: float64(i + 1),
			Extra: map[string]float64{"tcp_rr_value": rr},
			Series: []results.Series{{Key: "latency_loaded", Unit: "ms", T: []float64{1}, V: []float64{1}},
				{Key: "tcp_rr_latency_loaded", Unit: "ms", T: []float64{1}, V: []float64{rr}}}})
	}
	root := parseSVG(t, TimeSeriesChart(d, Light))
	want := map[string]string{"ts-0-rrul-latency_loaded-wan": "run 2 (median of 3)", "ts-1-rrul-tcp_rr_latency_loaded-wan": "run 3 (median of 3)"}
	for _, sec := range root.all("ts-section") {
		if w, ok := want[sec.attr("id")]; ok {
			delete(want, sec.attr("id"))
			if texts := strings.Join(sec.texts(), "|"); !strings.Contains(texts, w) {
				t.Errorf("%s: %q lacks %q", sec.attr("id"), texts, w)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("sections missing: %v", want)
	}
}
