package results

import (
	"strings"
	"testing"
)

// autoDoc is a --runs auto document (pilot 6, 5 %, at most 20, 1 ms for a
// difference) declaring rrul's value as a difference and ready as
// recorded once per path, as a run writes them.
func autoDoc() *Document {
	return &Document{
		Env: Env{Runs: 6, RunsAuto: &RunsAuto{Precision: 0.05, PrecisionMs: 1, MaxRuns: 20}},
		Instruments: []Instrument{
			{Name: "rrul", Metrics: []Metric{{Key: "value", Unit: "ms", Better: BetterLower, Difference: true}}},
			{Name: "ready", Metrics: []Metric{{Key: "value", Unit: "s", Better: BetterLower}}, OncePerPath: true},
		},
	}
}

// TestReadyPlannedOncePerPath: the time to ready is recorded once per
// transport and condition, so under --runs auto it is planned once: not
// "1 of 6 planned", and not marked for a precision it was never asked to
// reach.
func TestReadyPlannedOncePerPath(t *testing.T) {
	d := autoDoc()
	d.Samples = []Sample{{Transport: "ssh", Condition: "lan", Instrument: "ready", Run: 1, Value: 0.4}}
	if n := d.PlannedRuns("ssh", "lan", "ready"); n != 1 {
		t.Errorf("PlannedRuns(ready) = %d, want 1", n)
	}
	c := Cells(d)[0]
	if c.Planned == nil || *c.Planned != 1 || len(c.Marks) != 0 {
		t.Errorf("ready cell: planned %v, marks %v; want 1 and none (%+v)", c.Planned, c.Marks, c)
	}
	// A path brought up but never ready: 0 of 1 is still the precision
	// mark's business (a failed planned sample).
	d.Samples = append(d.Samples, Sample{Transport: "wg", Condition: "lan", Instrument: "ready", Run: 1, Value: 0.2})
	d.Env.Runs = 3
	d.Env.RunsAuto = nil
	if n := d.PlannedRuns("wg", "lan", "ready"); n != 1 {
		t.Errorf("PlannedRuns(ready) without --runs auto = %d, want 1", n)
	}
}

// TestDifferenceHeldToAbsolutePrecision: rrul's value is loaded minus idle
// latency, near 0 on an unloaded path. Held to 5 % of its median it plans
// --max-runs and is marked whatever it shows; held to the wider of 5 %
// and 1 ms, a pilot within ±0.3 ms plans the least (8), and the cell is
// not marked. Its CV (a spread over a mean near 0) is not a figure.
func TestDifferenceHeldToAbsolutePrecision(t *testing.T) {
	d := autoDoc()
	for i, v := range []float64{-0.2, 0.1, 0.3, 0.0, -0.1, 0.2, 0.05, -0.05} {
		d.Samples = append(d.Samples, Sample{Transport: "ssh", Condition: "lan", Instrument: "rrul", Run: i + 1, Value: v})
	}
	if n := d.PlannedRuns("ssh", "lan", "rrul"); n != 8 {
		t.Errorf("PlannedRuns(rrul) = %d, want 8", n)
	}
	c := Cells(d)[0]
	if c.Planned == nil || *c.Planned != 8 || len(c.Marks) != 0 || c.CV != nil {
		t.Errorf("rrul cell: planned %v, marks %v, CV %v; want 8, none, absent (%+v)", c.Planned, c.Marks, c.CV, c)
	}
	// The same runs spread over ±3 ms: not within 1 ms, marked.
	d.Samples = nil
	for i, v := range []float64{-3, -2, -1, 0, 1, 2, 3, -2.5, 2.5, 1.5} {
		d.Samples = append(d.Samples, Sample{Transport: "ssh", Condition: "lan", Instrument: "rrul", Run: i + 1, Value: v})
	}
	if c := Cells(d)[0]; !strings.Contains(strings.Join(c.Marks, ","), MarkPrecision) {
		t.Errorf("rrul cell over ±3 ms: marks %v, want precision", c.Marks)
	}
	// A value that is not a difference keeps its CV and relative rule.
	d.Instruments[0].Metrics[0].Difference = false
	if c := Cells(d)[0]; c.CV == nil {
		t.Errorf("non-difference cell lost its CV: %+v", c)
	}
}
