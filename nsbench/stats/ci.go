package stats

import (
	"math"
	"sort"

	"golang.org/x/perf/benchmath"
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
// order statistics, as benchstat computes it (golang.org/x/perf/benchmath's
// AssumeNothing: the narrowest pair of order statistics whose coverage, by
// the binomial distribution, is at least level, whatever the distribution
// of the samples). With fewer than 6 samples no interval reaches 95 %:
// benchmath then reports (−∞, +∞); MedianCI returns [min, max] with its real
// coverage and Reached false instead, rather than an interval that claims
// more than the data can support or none at all. It returns the zero
// Interval for no samples.
func MedianCI(xs []float64, level float64) Interval {
	n := len(xs)
	if n == 0 {
		return Interval{}
	}
	// benchmath sorts the sample it is given: hand it a copy.
	sum := benchmath.AssumeNothing.Summary(benchmath.NewSample(append([]float64(nil), xs...), &benchmath.DefaultThresholds), level)
	if math.IsInf(sum.Lo, 0) || math.IsInf(sum.Hi, 0) || sum.Confidence < level {
		s := append([]float64(nil), xs...)
		sort.Float64s(s)
		return Interval{Low: s[0], High: s[n-1], Level: coverage(n, 1), Reached: false}
	}
	return Interval{Low: sum.Lo, High: sum.Hi, Level: sum.Confidence, Reached: true}
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

// WithinPrecision reports whether the 95 % interval of xs's median exists
// and lies within precision (relative, 0.05 = 5 %) of the median on both
// sides: whether a cell reached what --runs auto asked for. It is a
// verdict on runs already made, never a rule for when to stop: stopping
// when it first holds ("optional stopping") keeps the runs that happened
// to agree, and the interval then covers the median less often than it
// says (see TwoStageRuns).
func WithinPrecision(xs []float64, precision float64) bool {
	return WithinTolerance(xs, Tolerance{Relative: precision})
}

// WithinTolerance is WithinPrecision for a tolerance (see Tolerance): the
// interval exists and lies within tol.HalfWidth of the median on both
// sides.
func WithinTolerance(xs []float64, tol Tolerance) bool {
	ci := MedianCI(xs, 0.95)
	if !ci.Reached {
		return false
	}
	m := Median(xs)
	half := max(m-ci.Low, ci.High-m)
	return half <= tol.HalfWidth(m)
}

// CV is the coefficient of variation (sample standard deviation over the
// mean's magnitude); ok is false below two samples or for a zero mean.
func CV(xs []float64) (cv float64, ok bool) {
	n := len(xs)
	if n < 2 {
		return 0, false
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(n)
	if mean == 0 {
		return 0, false
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss/float64(n-1)) / math.Abs(mean), true
}
