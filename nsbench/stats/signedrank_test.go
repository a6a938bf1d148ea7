package stats

import (
	"math"
	"testing"
)

func nearRel(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// The expected values below are counted by hand (or by enumerating the
// 2^n sign assignments), not taken from the code.
func TestWilcoxonSignedRankExact(t *testing.T) {
	for _, c := range []struct {
		name              string
		d                 []float64
		tPlus, less, more float64
		twoSided          float64
		n                 int
		wantExact         bool
	}{
		// All six positive: T+ = 21, the largest of 64 equally likely sums.
		{"six up", []float64{.1, .2, .3, .4, .5, .6}, 21, 1, 1. / 64, 2. / 64, 6, true},
		// The largest negative: T+ = 15. Sums ≥ 15 mirror sums ≤ 6 of
		// {1..6}: 1+1+1+2+2+3+4 = 14 subsets; sums ≥ 16 mirror ≤ 5: 10.
		{"one down", []float64{.1, .2, .3, .4, .5, -.6}, 15, 54. / 64, 14. / 64, 28. / 64, 6, true},
		// A zero is dropped (Wilcoxon's rule): the same as "six up".
		{"zero dropped", []float64{0, .1, .2, .3, .4, .5, .6}, 21, 1, 1. / 64, 2. / 64, 6, true},
		// Ties get midranks 1.5, 1.5, 3, 4; T+ = 6. Of the 16 subsets of
		// {1.5, 1.5, 3, 4}, six sum to ≥ 6 (6, 7, 7, 8.5, 8.5, 10) and
		// eleven to ≤ 6.
		{"ties", []float64{1, 1, 2, -3}, 6, 11. / 16, 6. / 16, 12. / 16, 4, true},
	} {
		got := WilcoxonSignedRank(c.d)
		if got.N != c.n || got.TPlus != c.tPlus || got.Exact != c.wantExact ||
			!nearRel(got.PLess, c.less) || !nearRel(got.PMore, c.more) || !nearRel(got.P(), c.twoSided) {
			t.Errorf("%s: got %+v, p %v; want N %d T+ %v P(≤) %v P(≥) %v p %v", c.name, got, got.P(),
				c.n, c.tPlus, c.less, c.more, c.twoSided)
		}
	}
	if got := WilcoxonSignedRank([]float64{0, 0}); got.N != 0 || got.P() != 1 {
		t.Errorf("only zeros: %+v, p %v; want N 0, p 1", got, got.P())
	}
}

// TestWilcoxonSignedRankNormal: above ExactSignedRankMax pairs the normal
// approximation with continuity correction. 60 differences ±i/100 with
// ranks 31 and 42…60 positive: T+ = 1000, μ = 915, σ² = 60·61·121/24;
// P(T+ ≥ 1000) = 1 − Φ((1000 − 915 − 0.5)/σ) = 0.266953 (by hand, erfc).
func TestWilcoxonSignedRankNormal(t *testing.T) {
	var d []float64
	for i := 1; i <= 60; i++ {
		x := float64(i) / 100
		if i != 31 && i < 42 {
			x = -x
		}
		d = append(d, x)
	}
	got := WilcoxonSignedRank(d)
	if got.Exact || got.TPlus != 1000 || math.Abs(got.PMore-0.26695270252976305) > 1e-9 ||
		math.Abs(got.P()-0.5339054050595261) > 1e-9 {
		t.Errorf("got %+v, p %v; want the normal approximation, T+ 1000, P(≥) 0.266953, p 0.533905", got, got.P())
	}
}

func TestHodgesLehmann(t *testing.T) {
	// Walsh averages of {0, 1, 5}: 0, 1, 5, 0.5, 2.5, 3 → median (1 + 2.5)/2.
	if got := HodgesLehmann([]float64{0, 1, 5}); got != 1.75 {
		t.Errorf("HL{0,1,5} = %v, want 1.75", got)
	}
	// The 36 Walsh averages of {−1, 0, 1, 2, 4, 8, 16, 32} have the median 4.75.
	if got := HodgesLehmann([]float64{-1, 0, 1, 2, 4, 8, 16, 32}); got != 4.75 {
		t.Errorf("HL = %v, want 4.75", got)
	}
	if got := HodgesLehmann(nil); !math.IsNaN(got) {
		t.Errorf("HL of nothing = %v, want NaN", got)
	}
}

// TestSignedRankCI: the interval is [W(k), W(M+1−k)] of the M sorted Walsh
// averages, k the largest with P(T ≤ k−1) ≤ α/2. By enumeration: n = 5 has
// no 95 % interval (P(T = 0) = 1/32 > 0.025); n = 6 gives k = 1 (the
// extremes, 62/64); n = 8 gives k = 4 (246/256), with W(4) = 0 and W(33) =
// 18 for the data below; n = 60 (normal approximation) gives k = 649, the
// same as the exact count.
func TestSignedRankCI(t *testing.T) {
	if ci := SignedRankCI([]float64{1, 2, 3, 4, 5}, 0.95); ci.Reached {
		t.Errorf("n = 5: %+v, want no 95 %% interval", ci)
	}
	ci := SignedRankCI([]float64{3, 1, 2, 6, 5, 4}, 0.95)
	if !ci.Reached || ci.Low != 1 || ci.High != 6 || !nearRel(ci.Level, 62./64) {
		t.Errorf("n = 6: %+v, want [1, 6] at 62/64", ci)
	}
	ci = SignedRankCI([]float64{-1, 0, 1, 2, 4, 8, 16, 32}, 0.95)
	if !ci.Reached || ci.Low != 0 || ci.High != 18 || !nearRel(ci.Level, 246./256) {
		t.Errorf("n = 8: %+v, want [0, 18] at 246/256", ci)
	}
	var d []float64
	for i := 1; i <= 60; i++ {
		d = append(d, float64(i)/100)
	}
	ci = SignedRankCI(d, 0.95)
	if !ci.Reached || !nearRel(ci.Low, 0.255) || !nearRel(ci.High, 0.355) {
		t.Errorf("n = 60: %+v, want [W(649), W(1182)] = [0.255, 0.355]", ci)
	}
}

// TestSignedRankCritical: by enumeration, six ranks: P(T+ ≥ 21) = 1/64,
// P(T+ ≥ 20) = 2/64, P(T+ ≥ 19) = 3/64, P(T+ ≥ 18) = 5/64; five ranks
// cannot reach 2.5 % (1/32); twelve ranks at 2.5 %: 65 (the interval's
// k = 14 of TestSignedRankCI, mirrored: 78 − 13).
func TestSignedRankCritical(t *testing.T) {
	for _, c := range []struct {
		n    int
		tail float64
		want int
	}{{6, 0.025, 21}, {6, 0.05, 19}, {5, 0.025, 16}, {12, 0.025, 65}, {60, 0.025, 1830 - 649 + 1}} {
		if got := SignedRankCritical(c.n, c.tail); got != c.want {
			t.Errorf("n %d, tail %v: %d, want %d", c.n, c.tail, got, c.want)
		}
	}
}
