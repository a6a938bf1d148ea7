package stats

import (
	"math"
	"testing"
)

func TestBenjaminiHochberg(t *testing.T) {
	// Sorted: 0.01, 0.03, 0.04, 0.2 → m·p/rank = 0.04, 0.06, 0.0533, 0.2,
	// then the running minimum from the largest down.
	got := BenjaminiHochberg([]float64{0.01, 0.04, 0.03, 0.2})
	want := []float64{0.04, 0.16 / 3, 0.16 / 3, 0.2}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("q = %v, want %v", got, want)
		}
	}
	if q := BenjaminiHochberg([]float64{0.9, 1}); q[0] != 1 || q[1] != 1 {
		t.Errorf("never above 1: %v", q)
	}
}
