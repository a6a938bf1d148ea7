package stats

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestMedianCIFewSamples(t *testing.T) {
	// Three runs, as the reference makes: no 95 % interval exists; the
	// widest one, [min, max], covers the median with 1 − 2/8 = 75 %.
	ci := MedianCI([]float64{3.65, 3.63, 3.64}, 0.95)
	if ci.Reached || !near(ci.Level, 0.75) || ci.Low != 3.63 || ci.High != 3.65 {
		t.Errorf("n=3: %+v, want [3.63, 3.65] at 75 %%, not reached", ci)
	}
	if got := MinSamplesFor(0.95); got != 6 {
		t.Errorf("MinSamplesFor(0.95) = %d, want 6", got)
	}
}

func TestMedianCIKnownData(t *testing.T) {
	// n = 6: only [min, max] reaches 95 % (coverage 1 − 2/64 = 0.96875).
	six := []float64{6, 1, 5, 2, 4, 3}
	ci := MedianCI(six, 0.95)
	if !ci.Reached || ci.Low != 1 || ci.High != 6 || !near(ci.Level, 0.96875) {
		t.Errorf("n=6: %+v", ci)
	}
	// n = 10: k = 2 gives 1 − 2·(1+10)/1024 = 0.978515625; k = 3 gives
	// 1 − 2·56/1024 = 0.890625 < 0.95, so the interval is (x(2), x(9)).
	ten := []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}
	ci = MedianCI(ten, 0.95)
	if !ci.Reached || ci.Low != 2 || ci.High != 9 || !near(ci.Level, 0.978515625) {
		t.Errorf("n=10: %+v", ci)
	}
	if ci := MedianCI(nil, 0.95); ci != (Interval{}) {
		t.Errorf("empty: %+v", ci)
	}
	// The input is not reordered.
	if six[0] != 6 || six[1] != 1 {
		t.Error("MedianCI sorted its input")
	}
}

// TestMedianCIOrderStatistics checks the intervals against order
// statistics and levels worked out by hand, not against the library the
// method comes from. K, the number of runs below the true median, is
// Bin(n, ½); (x(lo), x(hi)) covers the median when lo ≤ K < hi, with
// probability (2ⁿ − #{K < lo} − #{K ≥ hi}) / 2ⁿ, the counts being sums
// of C(n, k). Each pair is the narrowest reaching 95 %: dropping either
// end falls below it ("narrower"). Even n can give an asymmetric pair,
// the lower one of two mirror images. Above 30 runs the level is the
// exact sum too (go-moremath switches to a normal approximation there:
// 0.968859 instead of 0.970551 for 31 runs).
func TestMedianCIOrderStatistics(t *testing.T) {
	for _, tc := range []struct {
		n, lo, hi      int
		covered, outOf float64
		note           string
	}{
		// #{K<1} = 1, #{K≥7} = 8+1 → 256−1−9; narrower (2,7) 238/256, (1,6) 218/256.
		{8, 1, 7, 246, 256, "asymmetric"},
		// #{K<2} = 1+11, #{K≥9} = 55+11+1 → 2048−12−67; (3,9) 1914/2048.
		{11, 2, 9, 1969, 2048, "asymmetric"},
		// #{K<4} = 1+16+120+560, #{K≥12} = 1820+560+120+16+1 → 65536−697−2517; (5,12) 0.9232.
		{16, 4, 12, 62322, 65536, "asymmetric"},
		// #{K<6} = #{K≥15} = 1+20+190+1140+4845+15504 = 21700; (7,15) 0.9216.
		{20, 6, 15, 1005176, 1048576, "symmetric"},
		// #{K<10} = #{K≥22} = Σ_{k≤9} C(31,k) = 31621024; (11,22) 0.94990.
		{31, 10, 22, 2084241600, 2147483648, "symmetric"},
		// #{K<14} = #{K≥27} = Σ_{k≤13} C(40,k) = 21153123932; (15,27) 0.94042.
		{40, 14, 27, 1057205379912, 1099511627776, "symmetric"},
	} {
		xs := make([]float64, tc.n)
		for i := range xs {
			xs[i] = float64(10 * ((i*7)%tc.n + 1)) // x(k) = 10·k, shuffled (7 is prime to every n here)
		}
		ci := MedianCI(xs, 0.95)
		want := tc.covered / tc.outOf
		if !ci.Reached || ci.Low != float64(10*tc.lo) || ci.High != float64(10*tc.hi) || math.Abs(ci.Level-want) > 1e-12 {
			t.Errorf("n=%d: [%v, %v] at %.6f (reached %v), want [x(%d), x(%d)] = [%d, %d] at %.0f/%.0f = %.6f (%s)",
				tc.n, ci.Low, ci.High, ci.Level, ci.Reached, tc.lo, tc.hi, 10*tc.lo, 10*tc.hi, tc.covered, tc.outOf, want, tc.note)
		}
	}
}

func TestMannWhitneyExact(t *testing.T) {
	// Complete separation of 3 vs 3: U = 0, exact two-sided p = 2/20 = 0.1
	// (the smallest p three runs each can give, never below 0.05).
	u, p := MannWhitney([]float64{1, 2, 3}, []float64{4, 5, 6})
	if u != 0 || !near(p, 0.1) {
		t.Errorf("3 vs 3 separated: U %v p %v, want 0, 0.1", u, p)
	}
	// 4 vs 4 separated: p = 2/70.
	if _, p := MannWhitney([]float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}); !near(p, 2.0/70) {
		t.Errorf("4 vs 4 separated: p %v, want %v", p, 2.0/70)
	}
	// Interleaved samples: U = 4 of 9 → p = 1 (two-sided, capped).
	if _, p := MannWhitney([]float64{1, 3, 5}, []float64{2, 4, 6}); p < 0.5 {
		t.Errorf("interleaved: p %v, want large", p)
	}
	// Known table value: n1 = n2 = 5, U = 3 (5>4, 7>4, 7>6): P(U ≤ 3) =
	// (1+1+2+3)/252, two-sided 14/252.
	if u, p := MannWhitney([]float64{1, 2, 3, 5, 7}, []float64{4, 6, 8, 9, 10}); u != 3 || !near(p, 14.0/252) {
		t.Errorf("5 vs 5: U %v p %v, want 3, %v", u, p, 14.0/252)
	}
}

func TestMannWhitneyTiesAndIdentical(t *testing.T) {
	same := []float64{3.64, 3.63, 3.65}
	if _, p := MannWhitney(same, same); p < 0.99 {
		t.Errorf("identical samples: p %v, want 1", p)
	}
	// All values equal: no evidence of a shift.
	if _, p := MannWhitney([]float64{1, 1, 1}, []float64{1, 1, 1}); p != 1 {
		t.Errorf("all ties: p %v, want 1", p)
	}
	if _, p := MannWhitney(nil, []float64{1}); p != 1 {
		t.Errorf("empty side: p %v, want 1", p)
	}
	// Ties, clear shift, larger samples: normal approximation, small p.
	a := []float64{1, 1, 2, 2, 3, 3, 4, 4, 5, 5}
	b := []float64{11, 11, 12, 12, 13, 13, 14, 14, 15, 15}
	if _, p := MannWhitney(a, b); p > 0.001 {
		t.Errorf("shifted with ties: p %v, want < 0.001", p)
	}
}

func TestWithinPrecision(t *testing.T) {
	tight := []float64{100, 101, 99, 100, 102, 98, 100, 101}
	if !WithinPrecision(tight, 0.05) {
		t.Error("±2 % around 100 with 8 runs: want within 5 %")
	}
	if WithinPrecision(tight, 0.005) {
		t.Error("±2 %: not within 0.5 %")
	}
	if WithinPrecision([]float64{100, 100, 100, 100, 100}, 0.05) {
		t.Error("5 runs: no 95 % interval exists, never within")
	}
	if !WithinPrecision([]float64{100, 100, 100, 100, 100, 100}, 0.05) {
		t.Error("6 identical runs: the interval is the median itself")
	}
}

func TestCV(t *testing.T) {
	cv, ok := CV([]float64{9, 10, 11})
	if !ok || math.Abs(cv-0.1) > 1e-12 {
		t.Errorf("CV(9,10,11) = %v %v, want 0.1", cv, ok)
	}
	if _, ok := CV([]float64{5}); ok {
		t.Error("one sample has no CV")
	}
	if _, ok := CV([]float64{-1, 1}); ok {
		t.Error("a zero mean has no CV")
	}
}
