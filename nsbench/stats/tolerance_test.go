package stats

import "testing"

// TestToleranceOnADifference: a difference of two readings whose median
// lies near 0 (rrul's latency increase, loaded minus idle, on an unloaded
// path) can never reach a relative precision: held to 5 % of a median of
// 0.05 ms, a pilot spread over ±0.3 ms plans --max-runs and is never
// within it. With an absolute tolerance of 1 ms beside the relative one
// it plans what its spread asks (the least, 8) and is within it.
func TestToleranceOnADifference(t *testing.T) {
	pilot := []float64{-0.2, 0.1, 0.3, 0.0, -0.1, 0.2} // ms; median 0.05, s ≈ 0.19
	if n := TwoStageRuns(pilot, 0.05, 20); n != 20 {
		t.Errorf("relative only: n = %d, want the cap 20", n)
	}
	tol := Tolerance{Relative: 0.05, Absolute: 1}
	// π/2 · (2.5706 · 0.187 / 1)² = 0.36: the pilot would do; two more.
	if n := TwoStageRunsWithin(pilot, tol, 20); n != 8 {
		t.Errorf("with 1 ms: n = %d, want 8", n)
	}
	// At 0.1 ms: π/2 · (2.5706 · 0.1871 / 0.1)² = 36.4 → capped at 20.
	if n := TwoStageRunsWithin(pilot, Tolerance{Relative: 0.05, Absolute: 0.1}, 20); n != 20 {
		t.Errorf("with 0.1 ms: n = %d, want the cap 20", n)
	}
	// Far from 0 the relative part is the wider: 5 % of 200 ms is 10 ms.
	if h := tol.HalfWidth(-200); h != 10 {
		t.Errorf("half-width at -200 ms: %g, want 10", h)
	}
	runs := append(append([]float64(nil), pilot...), 0.05, -0.05)
	if WithinPrecision(runs, 0.05) {
		t.Errorf("±0.3 ms around 0.05 ms claimed within 5 %%")
	}
	if !WithinTolerance(runs, tol) {
		t.Errorf("±0.3 ms around 0.05 ms not within 1 ms")
	}
	if WithinTolerance([]float64{-3, -2, -1, 0, 1, 2, 3, -2.5, 2.5, 1.5}, tol) {
		t.Errorf("runs spread over ±3 ms claimed within 1 ms")
	}
	// The rule for a ratio is unchanged: an absolute tolerance of 0 is
	// TwoStageRuns.
	tight := []float64{100, 101, 99, 100, 102, 98}
	if a, b := TwoStageRunsWithin(tight, Tolerance{Relative: 0.015}, 20), TwoStageRuns(tight, 0.015, 20); a != b || a != 10 {
		t.Errorf("relative tolerance: %d, TwoStageRuns: %d; want both 10", a, b)
	}
}
