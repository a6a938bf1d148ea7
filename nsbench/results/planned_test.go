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

// TestCensoredPilotPlansMaxRuns: a censored pilot reading (rrul's value
// when a probe outlasted its test) is a lower bound, not the figure.
// Taken as +Inf the pilot's spread is unbounded, so the cell plans
// --max-runs rather than Stein's n from a bound read as exact (6 runs
// within ±0.3 ms but one censored at 0.1 ms planned the least, 8). When
// an end of the median's interval is a bound, the cell can claim no
// precision either way: it is marked "censored", not "precision".
func TestCensoredPilotPlansMaxRuns(t *testing.T) {
	d := autoDoc()
	d.Instruments[0].Metrics[0].CensoredBy = AtLeastKey("loaded_p50_ms")
	add := func(transport string, vs []float64, censored map[int]bool) {
		for i, v := range vs {
			s := Sample{Transport: transport, Condition: "lan", Instrument: "rrul", Run: i + 1, Value: v, Extra: map[string]float64{}}
			if censored[i] {
				s.Extra[AtLeastKey("loaded_p50_ms")] = 1
			}
			d.Samples = append(d.Samples, s)
		}
	}
	pilot := []float64{-0.2, 0.1, 0.3, 0.0, -0.1, 0.2}
	add("exact", append(pilot, 0.05, -0.05), nil)
	add("bound", append(pilot, 0.05, -0.05), map[int]bool{1: true})
	if n := d.PlannedRuns("exact", "lan", "rrul"); n != 8 {
		t.Errorf("PlannedRuns(exact pilot) = %d, want 8", n)
	}
	if n := d.PlannedRuns("bound", "lan", "rrul"); n != 20 {
		t.Errorf("PlannedRuns(pilot with a censored reading) = %d, want --max-runs 20", n)
	}
	marks := map[string]string{}
	for _, c := range Cells(d) {
		marks[c.Transport] = strings.Join(c.Marks, ",")
	}
	// exact: 8 of 8 within 1 ms, no mark. bound: the censored 0.1 lies
	// at or below the interval's upper end, which is then a bound; and 8
	// of the 20 planned ran (the precision mark's "failed runs" stays).
	if marks["exact"] != "" || marks["bound"] != "censored,precision" {
		t.Errorf("marks %v, want exact none and bound \"censored,precision\"", marks)
	}
	// The same runs all made (20 of 20): censored alone, never a
	// precision verdict on a bound.
	d.Samples = nil
	var vs []float64
	for i := range 20 {
		vs = append(vs, pilot[i%6])
	}
	add("bound", vs, map[int]bool{1: true})
	if c := Cells(d)[0]; strings.Join(c.Marks, ",") != "censored" || c.Planned == nil || *c.Planned != 20 {
		t.Errorf("20 of 20 with a censored run: marks %v planned %v, want censored and 20", c.Marks, c.Planned)
	}
	// A censored reading after the pilot and above the interval's upper
	// end cannot move it: the verdict stands on exact figures.
	d.Samples = nil
	vs[19] = 5000
	add("bound", vs, map[int]bool{19: true})
	if c := Cells(d)[0]; strings.Join(c.Marks, ",") != "" {
		t.Errorf("a censored reading above the interval: marks %v, want none", c.Marks)
	}
}
