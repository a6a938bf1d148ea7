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
// order statistics, as benchstat computes it (golang.org/x/perf/benchmath's
// AssumeNothing, through go-moremath's QuantileCI): the narrowest pair of
// order statistics (x(lo), x(hi)) whose coverage, by the binomial
// distribution, is at least level, whatever the distribution of the
// samples. It grows the pair from the middle out, one order statistic at a
// time, taking the more probable side and the lower one on a tie, so the
// pair is not always symmetric: with 8 runs it is (x(1), x(7)), at
// 246/256. Unlike QuantileCI, which switches to a normal approximation
// above 30 runs and then states an approximate level, the coverage here is
// the exact binomial sum for every n. With fewer than 6 samples no interval
// reaches 95 %: benchmath then reports (−∞, +∞); MedianCI returns [min, max]
// with its real coverage and Reached false instead, rather than an
// interval that claims more than the data can support or none at all. It
// returns the zero Interval for no samples.
func MedianCI(xs []float64, level float64) Interval {
	n := len(xs)
	if n == 0 {
		return Interval{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	lo, hi, cov := medianOrders(n, level)
	if lo < 1 || hi > n {
		return Interval{Low: s[0], High: s[n-1], Level: coverage(n, 1), Reached: false}
	}
	return Interval{Low: s[lo-1], High: s[hi-1], Level: cov, Reached: true}
}

// medianOrders is the narrowest pair of order statistics (1-based) whose
// exact coverage of the median reaches level. K, how many of n samples lie
// below the median, is Bin(n, ½); (x(lo), x(hi)) covers it when
// lo ≤ K < hi. Starting from K's lower mode it adds the more probable
// neighbour, the lower one on a tie (QuantileCI's rule). lo is 0 or hi is
// n+1 when only an unbounded interval reaches level.
func medianOrders(n int, level float64) (lo, hi int, cov float64) {
	pmf := func(k int) float64 {
		if k < 0 || k > n {
			return 0
		}
		return binomHalf(n, k)
	}
	lo = (n+1+1)/2 - 1 // ⌈(n+1)/2⌉ − 1, the lower mode
	hi = lo + 1
	cov = pmf(lo)
	for cov < level && (lo > 0 || hi <= n) {
		if below, above := pmf(lo-1), pmf(hi); below >= above {
			cov += below
			lo--
		} else {
			cov += above
			hi++
		}
	}
	return lo, hi, cov
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
