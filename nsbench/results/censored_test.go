package results

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// censoredDoc: rrul's loaded p50 over 6 runs per transport, one run of
// each censored (a probe outlasted its test); "high" has it above the
// median, "low" at or below it. The declaration predates censored_by, as
// documents written before it do.
func censoredDoc() *Document {
	d := &Document{Instruments: []Instrument{{Name: "rrul", Metrics: []Metric{
		{Key: "loaded_p50_ms", Unit: "ms"}, {Key: "idle_p50_ms", Unit: "ms"}}}}}
	add := func(tr string, loaded []float64, censoredRun int) {
		for i, v := range loaded {
			extra := map[string]float64{"loaded_p50_ms": v, "idle_p50_ms": 1}
			if i == censoredRun {
				extra[CensoredWaitMs] = v
			}
			d.Samples = append(d.Samples, Sample{Transport: tr, Condition: "wan", Instrument: "rrul", Run: i + 1, Value: v - 1, Extra: extra})
		}
	}
	add("high", []float64{10, 11, 12, 13, 14, 5000}, 5)
	add("low", []float64{10, 11, 12, 13, 14, 15}, 2)
	return d
}

// TestCensoredCellsAreBounds: a cell holding a censored reading says so
// in JSON: how many runs are bounds, and which of its figures are lower
// bounds (those a censored reading at or below them could raise), with
// no CV. A censored reading above the median leaves the median exact.
func TestCensoredCellsAreBounds(t *testing.T) {
	want := map[string]string{
		"high/loaded_p50_ms": `"censored":1,"lower_bounds":["max","ci_high"]`,
		"low/loaded_p50_ms":  `"censored":1,"lower_bounds":["median","max","ci_high"]`,
	}
	for _, c := range Cells(censoredDoc()) {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		k := c.Transport + "/" + c.Metric
		w, bounded := want[k]
		switch {
		case bounded && !strings.Contains(string(b), w):
			t.Errorf("%s: %s, want %s", k, b, w)
		case bounded && c.CV != nil:
			t.Errorf("%s: a CV of lower bounds: %v", k, *c.CV)
		case !bounded && (c.Censored != 0 || c.LowerBounds != nil || strings.Contains(string(b), "lower_bounds")):
			t.Errorf("%s: an exact cell marked censored: %s", k, b)
		}
		if got := c.MedianAtLeast(); got != (k == "low/loaded_p50_ms") {
			t.Errorf("%s: median a lower bound %v", k, got)
		}
	}
}

// TestMetricReadings: rrul declares its loaded latency censorable; a
// reading is a bound exactly in a censored sample.
func TestMetricReadings(t *testing.T) {
	d := censoredDoc()
	d.Instruments[0].Metrics[0].CensoredBy = CensoredWaitMs
	_, rs := d.MetricReadings()
	high := rs[CellKey{"high", "wan", "rrul", "loaded_p50_ms"}]
	if got := slices.IndexFunc(high, func(r Reading) bool { return r.AtLeast }); got != 5 || Censored(high) != 1 {
		t.Errorf("high: bound at %d (%d bounds), want run 6 only: %+v", got, Censored(high), high)
	}
	if idle := rs[CellKey{"high", "wan", "rrul", "idle_p50_ms"}]; Censored(idle) != 0 {
		t.Errorf("idle latency is never censored: %+v", idle)
	}
}
