package results

import (
	"strings"
	"testing"
)

func f(v float64) *float64 { return &v }

func TestCells(t *testing.T) {
	var samples []Sample
	for i, v := range []float64{3.63, 3.65, 3.64} {
		samples = append(samples, Sample{Transport: "ssh", Condition: "lan", Instrument: "iperf3-1", Run: i + 1, Value: v})
	}
	for i := 0; i < 6; i++ {
		samples = append(samples, Sample{Transport: "ssh", Condition: "lan", Instrument: "tcp_rr", Run: i + 1,
			Value: float64(100 + i), P50Us: f(float64(20 + i)), P99Us: f(float64(80 - i))})
	}
	cells := Cells(&Document{Samples: samples})
	if len(cells) != 4 {
		t.Fatalf("got %d cells, want 4: %+v", len(cells), cells)
	}
	c := cells[0]
	if c.Instrument != "iperf3-1" || c.Metric != "value" || c.N != 3 || c.Median != 3.64 || c.Min != 3.63 || c.Max != 3.65 {
		t.Errorf("iperf3 cell: %+v", c)
	}
	if c.CI95Low != nil || c.CILow != 3.63 || c.CIHigh != 3.65 || c.CILevel != 0.75 || !strings.Contains(c.Warning, "needs at least 6") {
		t.Errorf("3 runs must not claim a 95 %% interval: %+v", c)
	}
	rr := cells[1]
	if rr.Metric != "value" || rr.N != 6 || rr.CI95Low == nil || *rr.CI95Low != 100 || *rr.CI95High != 105 || rr.Warning != "" {
		t.Errorf("tcp_rr value cell with 6 runs: %+v", rr)
	}
	if cells[2].Metric != "p50_us" || cells[2].Median != 22.5 || cells[3].Metric != "p99_us" || cells[3].Median != 77.5 {
		t.Errorf("latency cells: %+v %+v", cells[2], cells[3])
	}
}

// Marks follow the stated thresholds: background and steal from any
// sample's noise, spread from the runs' CV (precision: TestPrecisionMark).
func TestCellMarks(t *testing.T) {
	noise := func(bg, steal float64) *Noise { return &Noise{BackgroundPct: bg, StealPct: steal, WindowSec: 2} }
	var ss []Sample
	add := func(tr, in string, v float64, n *Noise) {
		ss = append(ss, Sample{Transport: tr, Condition: "lan", Instrument: in, Value: v, Noise: n})
	}
	add("quiet", "iperf3-1", 1.00, noise(1, 0))
	add("quiet", "iperf3-1", 1.01, noise(9.9, 4.9))
	add("busy", "iperf3-1", 1.00, noise(2, 0))
	add("busy", "iperf3-1", 1.00, noise(35, 0))
	add("stolen", "iperf3-1", 1.00, noise(0, 6))
	add("stolen", "iperf3-1", 1.00, nil)
	add("spread", "iperf3-1", 1.0, nil)
	add("spread", "iperf3-1", 1.3, nil)
	d := &Document{Samples: ss}
	want := map[string]string{"quiet": "", "busy": "background", "stolen": "steal", "spread": "spread"}
	for _, c := range Cells(d) {
		if got := strings.Join(c.Marks, ","); got != want[c.Transport] {
			t.Errorf("%s: marks %q, want %q (cell %+v)", c.Transport, got, want[c.Transport], c)
		}
	}
	c := Cells(d)[1]
	if c.BackgroundPctMax == nil || *c.BackgroundPctMax != 35 || c.CV == nil || *c.CV != 0 {
		t.Errorf("busy cell readings: %+v", c)
	}
}

// TestPrecisionMark: under --runs auto a cell is marked when its interval
// is wider than the precision, whether or not it reached --max-runs, and
// when some of the runs its pilot planned failed, even if the valid ones
// look precise. Every auto cell records the runs its pilot planned.
func TestPrecisionMark(t *testing.T) {
	d := &Document{Env: Env{Runs: 6, RunsAuto: &RunsAuto{Precision: 0.05, MaxRuns: 20}}}
	add := func(tr string, vals ...float64) {
		for i, v := range vals {
			d.Samples = append(d.Samples, Sample{Transport: tr, Condition: "lan", Instrument: "iperf3-1", Run: i + 1, Value: v})
		}
	}
	tight := []float64{100, 101, 99, 100, 102, 98, 100, 101} // the pilot plans 8 runs
	add("precise", tight...)
	// The same cell whose 7th run failed: 7 valid runs, all within 5 %.
	add("failed", append(append([]float64(nil), tight[:6]...), tight[7])...)
	d.Samples[len(d.Samples)-1].Run = 8
	d.Failures = append(d.Failures, Failure{Transport: "failed", Condition: "lan", Instrument: "iperf3-1", Run: 7, Error: "iperf3: timeout"})
	// A pilot that plans 8 runs, whose later runs spread: the interval of
	// the 8 is wider than 5 % though the cell is far below --max-runs.
	add("widened", 100, 101, 99, 100, 102, 98, 60, 140)
	want := map[string]struct {
		marks   string
		planned int
	}{"precise": {"", 8}, "failed": {"precision", 8}, "widened": {"spread,precision", 8}}
	for _, c := range Cells(d) {
		w := want[c.Transport]
		if got := strings.Join(c.Marks, ","); got != w.marks || c.Planned == nil || *c.Planned != w.planned {
			t.Errorf("%s: marks %q planned %v, want %q and %d (cell %+v)", c.Transport, got, c.Planned, w.marks, w.planned, c)
		}
	}
	if n := d.PlannedRuns("precise", "lan", "iperf3-1"); n != 8 {
		t.Errorf("PlannedRuns = %d, want 8", n)
	}
	// A pilot whose runs all failed still planned its 6.
	if n := d.PlannedRuns("absent", "lan", "iperf3-1"); n != 6 {
		t.Errorf("PlannedRuns without a pilot = %d, want 6", n)
	}
	d.Env.RunsAuto = nil
	if c := Cells(d)[0]; c.Planned != nil || len(c.Marks) != 0 {
		t.Errorf("without --runs auto: %+v", c)
	}
}

// TestCellsKeepOutNotConvergedRPM: an rpm sample whose test never
// converged stays in the document but not in its cell (median, n, range)
// nor in --runs auto's pilot; with every run excluded there is no cell.
func TestCellsKeepOutNotConvergedRPM(t *testing.T) {
	d := &Document{Env: Env{Runs: 3}, Instruments: []Instrument{{Name: "rpm", Metrics: []Metric{
		{Key: "value", Unit: "RPM", Better: BetterHigher}, {Key: "http_l_ms", Unit: "ms", Better: BetterLower}}}}}
	for i, v := range []float64{1000, 5000, 1100, 6000} {
		s := Sample{Transport: "ssh", Condition: "lan", Instrument: "rpm", Run: i + 1, Value: v, Extra: map[string]float64{"http_l_ms": 60000 / v}}
		if v > 2000 {
			s.Extra[NotConverged] = 1
		}
		d.Samples = append(d.Samples, s)
		d.Samples = append(d.Samples, Sample{Transport: "tw", Condition: "lan", Instrument: "rpm", Run: i + 1, Value: v,
			Extra: map[string]float64{NotConverged: 1}})
	}
	cells := Cells(d)
	if len(cells) != 2 {
		t.Fatalf("got %d cells, want ssh's value and http_l_ms only: %+v", len(cells), cells)
	}
	if c := cells[0]; c.Transport != "ssh" || c.N != 2 || c.Median != 1050 || c.Max != 1100 {
		t.Errorf("value cell %+v: want n 2, median 1050, max 1100 (the not-converged 5000 and 6000 kept out)", c.Summary)
	}
	if c := cells[1]; c.Metric != "http_l_ms" || c.N != 2 || c.Min != 60000.0/1100 {
		t.Errorf("http_l_ms cell %+v: want the converged runs' only", c.Summary)
	}
	d.Env.RunsAuto = &RunsAuto{Precision: 0.5, MaxRuns: 30}
	// The pilot is runs 1 and 3 (1000, 1100): Stein's rule asks 5 (the
	// second stage's least); with run 2's 5000 it would ask MaxRuns.
	if got := d.PlannedRuns("ssh", "lan", "rpm"); got != 5 {
		t.Errorf("planned %d, want 5 from the converged pilot runs only", got)
	}
}
