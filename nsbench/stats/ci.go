package stats

import (
	"math"
	"sort"
)

// Interval is a confidence interval for a median.
type Interval struct {
	Low, High float64
	// Level is the interval's actual coverage (e.g. 0.95, or 0.75 for
	// [min, max] of three samples).
	Level float64
	// Reached says whether Level is at least the level asked for. When it
	// is not, Low and High are the widest interval the samples allow
	// (their min and max) and Level is that interval's coverage.
	Reached bool
}

// MedianCI is the distribution-free confidence interval of the median from
// order statistics (the method benchstat's AssumeNothing uses): the
// interval between the k-th smallest and k-th largest sample covers the
// true median with probability 1 − 2·P(Binomial(n, ½) < k), whatever the
// distribution. It picks the narrowest such interval whose coverage is at
// least level. With fewer than 6 samples no interval reaches 95 %: then it
// returns [min, max] with its real coverage and Reached false, rather than
// a narrower interval that claims more than the data can support.
// It returns the zero Interval for no samples.
func MedianCI(xs []float64, level float64) Interval {
	n := len(xs)
	if n == 0 {
		return Interval{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	best := 0 // largest k with coverage ≥ level
	for k := 1; k <= n/2; k++ {
		if coverage(n, k) >= level {
			best = k
		}
	}
	if best == 0 {
		return Interval{Low: s[0], High: s[n-1], Level: coverage(n, 1), Reached: false}
	}
	return Interval{Low: s[best-1], High: s[n-best], Level: coverage(n, best), Reached: true}
}

// MinSamplesFor is the smallest sample count whose [min, max] reaches level.
func MinSamplesFor(level float64) int {
	for n := 1; n < 1000; n++ {
		if coverage(n, 1) >= level {
			return n
		}
	}
	return math.MaxInt
}

// coverage of (x_(k), x_(n+1-k)): 1 − 2·P(Bin(n, ½) ≤ k−1).
func coverage(n, k int) float64 {
	tail := 0.0
	for i := 0; i < k; i++ {
		tail += binomHalf(n, i)
	}
	return 1 - 2*tail
}

// binomHalf is P(Bin(n, ½) = i).
func binomHalf(n, i int) float64 {
	lg := lgammaInt(n+1) - lgammaInt(i+1) - lgammaInt(n-i+1) - float64(n)*math.Ln2
	return math.Exp(lg)
}

func lgammaInt(n int) float64 {
	v, _ := math.Lgamma(float64(n))
	return v
}
