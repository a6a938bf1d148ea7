package stats

import (
	"math"

	moremath "github.com/aclements/go-moremath/stats"
)

// MannWhitney is the two-sided Mann-Whitney U test of whether xs and ys
// come from distributions with different locations, as benchstat runs it
// (github.com/aclements/go-moremath, which golang.org/x/perf/benchmath
// uses: exact p-values for small samples, ties included, the normal
// approximation beyond). It assumes nothing about the distributions, which
// suits the few, often skewed samples of a benchmark. u is the smaller of
// the two U statistics. It returns p = 1 when either side is empty or every
// value is the same: no evidence of a shift.
func MannWhitney(xs, ys []float64) (u, p float64) {
	n1, n2 := len(xs), len(ys)
	if n1 == 0 || n2 == 0 {
		return 0, 1
	}
	res, err := moremath.MannWhitneyUTest(xs, ys, moremath.LocationDiffers)
	if err != nil {
		return float64(n1*n2) / 2, 1
	}
	return math.Min(res.U, float64(n1*n2)-res.U), math.Min(1, res.P)
}
