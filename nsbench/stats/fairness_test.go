package stats

import (
	"math"
	"testing"
)

func TestJain(t *testing.T) {
	for _, c := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"one client", []float64{940}, 1},
		{"equal shares", []float64{250, 250, 250, 250}, 1},
		{"one of four hogs", []float64{1000, 0, 0, 0}, 0.25},
		{"one of eight hogs", []float64{800, 0, 0, 0, 0, 0, 0, 0}, 0.125},
		// (1+2+3+4)² / (4·(1+4+9+16)) = 100/120
		{"ramp", []float64{1, 2, 3, 4}, 100.0 / 120},
		// two equal halves of the clients, one at twice the other: 9/10
		{"two groups", []float64{2, 2, 1, 1}, 36.0 / 40},
	} {
		if got := Jain(c.xs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: Jain(%v) = %v, want %v", c.name, c.xs, got, c.want)
		}
	}
	for _, bad := range [][]float64{nil, {0, 0}, {1, -1}, {math.NaN(), 1}, {math.Inf(1), 1}} {
		if got := Jain(bad); !math.IsNaN(got) {
			t.Errorf("Jain(%v) = %v, want NaN (nothing measured)", bad, got)
		}
	}
}

// The index is scale-free: Mbit/s or Gbit/s give the same fairness.
func TestJainScaleFree(t *testing.T) {
	xs := []float64{310, 120, 95, 480}
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = x / 1000
	}
	if a, b := Jain(xs), Jain(ys); math.Abs(a-b) > 1e-12 {
		t.Errorf("Jain changes with the unit: %v against %v", a, b)
	}
}

func TestSummarizeShares(t *testing.T) {
	s := SummarizeShares([]float64{400, 100, 300, 200})
	if s.N != 4 || s.Aggregate != 1000 || s.PerClient.Min != 100 || s.PerClient.Median != 250 || s.PerClient.Max != 400 {
		t.Errorf("SummarizeShares = %+v, want N 4, aggregate 1000, min 100, median 250, max 400", s)
	}
	if want := 1e6 / (4 * 300000.0); math.Abs(s.Fairness-want) > 1e-12 {
		t.Errorf("fairness %v, want %v", s.Fairness, want)
	}
	if z := SummarizeShares(nil); z.N != 0 || !math.IsNaN(z.Fairness) {
		t.Errorf("no clients: %+v, want N 0 and no fairness", z)
	}
}

func TestPerAdded(t *testing.T) {
	// 4 MiB base, 512 KiB per client, exactly.
	ns := []int{1, 2, 4, 8}
	ys := []float64{4608, 5120, 6144, 8192}
	if got := PerAdded(ns, ys); math.Abs(got-512) > 1e-9 {
		t.Errorf("PerAdded = %v, want 512", got)
	}
	// Noisy: the least-squares slope, not the last step.
	if got := PerAdded([]int{1, 2, 3}, []float64{10, 14, 16}); math.Abs(got-3) > 1e-9 {
		t.Errorf("PerAdded = %v, want 3", got)
	}
	for _, c := range []struct {
		ns []int
		ys []float64
	}{{[]int{1}, []float64{1}}, {[]int{2, 2}, []float64{1, 3}}, {[]int{1, 2}, []float64{1}}} {
		if got := PerAdded(c.ns, c.ys); !math.IsNaN(got) {
			t.Errorf("PerAdded(%v, %v) = %v, want NaN", c.ns, c.ys, got)
		}
	}
}

func TestSummarizeClientsMissing(t *testing.T) {
	all := SummarizeClients(3, []float64{100, 100, 100})
	if all.Missing != 0 || all.Fairness != 1 || all.Aggregate != 300 {
		t.Errorf("every client measured: %+v, want missing 0, fairness 1, aggregate 300", all)
	}
	// One of four stalled: the three measured are equal, but an index of 1
	// over them would hide the fourth.
	s := SummarizeClients(4, []float64{100, 100, 100})
	if s.Missing != 1 || s.N != 3 || s.Aggregate != 300 || !math.IsNaN(s.Fairness) {
		t.Errorf("one of four missing: %+v, want missing 1, N 3, aggregate 300 (a lower bound), fairness NaN", s)
	}
	if z := SummarizeClients(2, nil); z.Missing != 2 || z.N != 0 || !math.IsNaN(z.Fairness) {
		t.Errorf("none measured: %+v, want missing 2, N 0, no fairness", z)
	}
}
