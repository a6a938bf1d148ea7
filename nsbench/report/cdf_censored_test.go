package report

import (
	"math"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestLatencyCDFCensoredAndProbes: an ICMP-probed and a TCP_RR-probed
// transport never share a CDF panel, and a censored wait is drawn, not
// dropped: as a tick on a Kaplan–Meier curve, counted in the legend —
// from the censored series, or, in a document written before it, from
// the sample's censored wait.
func TestLatencyCDFCensoredAndProbes(t *testing.T) {
	const icmp = "latency by ICMP echo every 100 ms (ping -i 0.1), each probe's round trip"
	const tcprr = "latency by netperf TCP_RR with interim results every 100 ms (-D 0.1), each interval's mean round trip"
	series := func(key string, vs ...float64) results.Series {
		se := results.Series{Key: key, Unit: "ms", V: vs}
		for i := range vs {
			se.T = append(se.T, float64(i))
		}
		return se
	}
	d := &results.Document{SchemaVersion: results.SchemaVersion, Env: results.Env{Runs: 1},
		Transports: []results.Transport{{Name: "ssh", Label: "Pure SSH"}, {Name: "tw", Label: "SSH over tw"}},
		Conditions: []results.Condition{{Name: "wan"}},
		Samples: []results.Sample{
			{Transport: "ssh", Condition: "wan", Instrument: "rrul", Run: 1, Method: icmp,
				Extra:  map[string]float64{results.CensoredWaitMs: 2000},
				Series: []results.Series{series("latency_loaded", 10, 20, 30, 40), series("latency_loaded_censored", 2000, 1900)}},
			{Transport: "tw", Condition: "wan", Instrument: "rrul", Run: 1, Method: tcprr,
				Extra:  map[string]float64{results.CensoredWaitMs: 5000},
				Series: []results.Series{series("latency_loaded", 100, 200)}},
		}}
	root := parseSVG(t, LatencyCDFChart(d, Light))
	if texts := root.texts(); !strings.Contains(texts[len(texts)-1], "Ticks: censored waits") {
		t.Errorf("the footer does not explain the ticks: %q", texts[len(texts)-1])
	}
	panels := root.all("panel cdf-panel")
	var ids []string
	for _, p := range panels {
		ids = append(ids, p.attr("id"))
	}
	if got, want := strings.Join(ids, " "), "cdf-0-rrul-latency_loaded-ICMP-wan cdf-1-rrul-latency_loaded-TCP_RR-wan"; got != want {
		t.Fatalf("CDF panels %q, want %q (one per probe; the censored series is no panel of its own)", got, want)
	}
	for i, want := range []struct {
		transport, legend string
		ticks             int
	}{{"ssh", "Pure SSH (1 run, 6 probes, 2 censored)", 2}, {"tw", "SSH over tw (1 run, 3 probes, 1 censored)", 1}} {
		p := panels[i]
		lines := p.all("cdf-line")
		if len(lines) != 1 || lines[0].attr("data-transport") != want.transport {
			t.Errorf("panel %d: lines %v, want %s's alone", i, lines, want.transport)
		}
		texts := strings.Join(p.texts(), "|")
		if !strings.Contains(texts, want.legend) || !strings.Contains(texts, "Kaplan–Meier") {
			t.Errorf("panel %d: %q lacks %q and the estimate's name", i, texts, want.legend)
		}
		if n := len(p.all("censored")); n != want.ticks {
			t.Errorf("panel %d: %d censored ticks, want %d", i, n, want.ticks)
		}
	}
}

// TestKaplanMeier against a hand computation: 4 readings and a wait of 25
// (5 at risk): F(10) = 1/5, F(20) = 2/5; the wait leaves 2 at risk, so
// F(30) = 1 − 3/5·1/2 = 0.7 and F(40) = 1. A longest wait censored keeps
// the estimate below 1.
func TestKaplanMeier(t *testing.T) {
	near := func(got [][2]float64, want [][2]float64) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if got[i][0] != want[i][0] || math.Abs(got[i][1]-want[i][1]) > 1e-12 {
				return false
			}
		}
		return true
	}
	if got := kaplanMeier([]float64{10, 20, 30, 40}, []float64{25}); !near(got, [][2]float64{{10, 0.2}, {20, 0.4}, {30, 0.7}, {40, 1}}) {
		t.Errorf("kaplanMeier = %v", got)
	}
	if got := kaplanMeier([]float64{10, 20}, []float64{2000, 2000}); !near(got, [][2]float64{{10, 0.25}, {20, 0.5}}) {
		t.Errorf("censored at the top: %v, want to stop at 0.5", got)
	}
	if got := kaplanMeier([]float64{1, 1, 2}, nil); !near(got, [][2]float64{{1, 2.0 / 3}, {2, 1}}) {
		t.Errorf("no waits: %v, want the empirical CDF", got)
	}
}

// TestTimeSeriesCensoredNoted: the censored waits are no time series of
// their own (they are bounds, not readings over time); the loaded
// latency's panel says how many it does not draw.
func TestTimeSeriesCensoredNoted(t *testing.T) {
	d := &results.Document{SchemaVersion: results.SchemaVersion, Env: results.Env{Runs: 1},
		Conditions: []results.Condition{{Name: "wan"}},
		Samples: []results.Sample{{Transport: "ssh", Condition: "wan", Instrument: "rrul", Run: 1,
			Series: []results.Series{{Key: "latency_loaded", Unit: "ms", T: []float64{1, 2}, V: []float64{10, 20}},
				{Key: "latency_loaded_censored", Unit: "ms", T: []float64{3}, V: []float64{2000}}}}}}
	root := parseSVG(t, TimeSeriesChart(d, Light))
	sections := root.all("ts-section")
	if len(sections) != 1 || sections[0].attr("id") != "ts-0-rrul-latency_loaded-wan" {
		t.Fatalf("%d sections, want the loaded latency's alone", len(sections))
	}
	if texts := strings.Join(sections[0].texts(), "|"); !strings.Contains(texts, "2 points · 1 unanswered (censored), not drawn") {
		t.Errorf("the panel does not say what it leaves out: %q", texts)
	}
}
