package stats

import (
	"math"

	moremath "github.com/aclements/go-moremath/stats"
)

// TwoStageRuns is how many runs a cell gets under --runs auto, fixed once
// from its pilot (the first runs, every cell the same number) and never
// revised: Stein's two-stage rule, for the median. The pilot's sample
// standard deviation s, relative to its median m, gives the number of runs
// whose 95 % interval of the median has a half-width of about precision·|m|:
//
//	n = ⌈ π/2 · (t · s / (precision · |m|))² ⌉
//
// where t is Student's 97.5 % quantile with (pilot − 1) degrees of freedom
// (Stein's allowance for s being estimated from few runs; 2.571 for a
// pilot of 6) and π/2 the variance of the median over the mean's for
// normal runs. n is at least len(pilot) + SecondStageMin and at most
// maxRuns. Because n
// depends only on the pilot, every later run counts whatever it shows,
// and the interval keeps its coverage (TestTwoStageCoverage measures it;
// stopping when the interval first looks narrow does not). A pilot of
// fewer than two values has no spread: n is len(pilot), and the cell
// cannot claim the precision (see WithinPrecision). A zero median has no
// relative precision: n is maxRuns (a difference near 0 is held to an
// absolute one instead: TwoStageRunsWithin).
func TwoStageRuns(pilot []float64, precision float64, maxRuns int) int {
	return TwoStageRunsWithin(pilot, Tolerance{Relative: precision}, maxRuns)
}

// Tolerance is the half-width --runs auto asks of a median's 95 %
// interval: Relative·|median|, but at least Absolute (in the values'
// unit). A ratio or rate needs only the relative part; a difference of two
// readings (rrul's loaded minus idle latency) can lie at or near 0, where
// no relative half-width can be reached, so it also gets an absolute one.
type Tolerance struct{ Relative, Absolute float64 }

// HalfWidth is the half-width asked of an interval around median.
func (t Tolerance) HalfWidth(median float64) float64 {
	return max(t.Relative*math.Abs(median), t.Absolute)
}

// TwoStageRunsWithin is TwoStageRuns for a tolerance: the pilot's n for
// an interval of the median within tol.HalfWidth of it (Stein's rule as
// above, with precision·|m| replaced by that half-width); maxRuns when
// the tolerance is 0.
func TwoStageRunsWithin(pilot []float64, tol Tolerance, maxRuns int) int {
	k := len(pilot)
	if k < 2 {
		return k
	}
	least := min(k+SecondStageMin, max(k, maxRuns))
	half := tol.HalfWidth(Median(pilot))
	if half <= 0 {
		return max(k, maxRuns)
	}
	var sum float64
	for _, x := range pilot {
		sum += x
	}
	mean := sum / float64(k)
	var ss float64
	for _, x := range pilot {
		ss += (x - mean) * (x - mean)
	}
	s := math.Sqrt(ss / float64(k-1))
	t := moremath.InvCDF(moremath.TDist{V: float64(k - 1)})(0.975)
	r := t * s / half
	n := math.Ceil(math.Pi / 2 * r * r)
	if n > float64(maxRuns) {
		return max(k, maxRuns)
	}
	return max(least, int(n))
}

// SecondStageMin is the fewest runs a cell gets after its pilot. A pilot
// whose runs happen to cluster (all six from one mode of a bimodal cell)
// asks for no more runs, and an interval resting on that pilot alone
// misses the median more often than it says: in TestTwoStageCoverage's
// worst case, two more runs lift the coverage from about 94 % to 95 % for
// half a run per cell on average.
const SecondStageMin = 2
