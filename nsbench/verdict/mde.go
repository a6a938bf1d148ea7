package verdict

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// mdePower is the power the MDE is the smallest change for.
const mdePower = 0.8

// mdeReps is how many simulated cells estimate the rule's power at a shift.
const mdeReps = 4000

// mde is the smallest shift of d, the cell's per-pair changes (log
// ratios, or differences in the unit), it could have detected with 80 %
// power at its pair count and spread: θ·s, where s is the standard
// deviation of d (a ratio cell's relative MDE is exp(θ·s) − 1) and θ (detectableShift) the
// smallest shift, in those standard deviations, at which the verdict's
// tests together — all pairs two-sided, the pairs before the last
// ConfirmBatch two-sided, the last ConfirmBatch one-sided, each at Alpha —
// call a change in 80 % of simulated cells with normal differences. It
// leaves out the Benjamini–Hochberg adjustment (which depends on the other
// cells) and MinEffect (a change must also be at least that). NaN below
// FirstLook pairs, where no change can be called.
func mde(d []float64, o Options) float64 {
	n := len(d)
	if n < FirstLook {
		return math.NaN()
	}
	var sum, ss float64
	for _, x := range d {
		sum += x
	}
	mean := sum / float64(n)
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	return detectableShift(n, o.Alpha) * math.Sqrt(ss/float64(n-1))
}

type shiftKey struct {
	n     int
	alpha float64
}

// mdeMaxPairs is the most pairs detectableShift simulates. Its cost grows
// with n (0.6 s at 100 pairs, 0.9 s at 128 on a 2-vCPU VM, spent at
// every look of a run whose cells reach it), and n is a document's
// word when `report` renders one. Past it the shift at mdeMaxPairs is
// used: the rule's power only grows with n (each of its three tests has
// more pairs), so that shift is an upper bound, and the MDE a cautious one.
const mdeMaxPairs = 128

// shifts caches detectableShift: it depends on n and alpha only.
var shifts sync.Map

// detectableShift is θ for n pairs at level alpha (see mde): the power is
// estimated from mdeReps cells of n standard normal draws (a fixed seed,
// the same draws for every θ, so the power grows with θ) and θ found by
// bisection to 0.001; past mdeMaxPairs pairs, mdeMaxPairs'.
func detectableShift(n int, alpha float64) float64 {
	n = min(n, mdeMaxPairs)
	key := shiftKey{n, alpha}
	if v, ok := shifts.Load(key); ok {
		return v.(float64)
	}
	k := ConfirmBatch(n)
	cAll := stats.SignedRankCritical(n, alpha/2)
	cFirst := stats.SignedRankCritical(n-k, alpha/2)
	cLast := stats.SignedRankCritical(k, alpha)
	rng := rand.New(rand.NewPCG(uint64(n), 31))
	draws := make([][]float64, mdeReps)
	for i := range draws {
		draws[i] = make([]float64, n)
		for j := range draws[i] {
			draws[i][j] = rng.NormFloat64()
		}
	}
	d := make([]float64, n)
	power := func(theta float64) float64 {
		hits := 0
		for _, z := range draws {
			for j := range z {
				d[j] = z[j] + theta
			}
			if tPlus(d) >= cAll && tPlus(d[:n-k]) >= cFirst && tPlus(d[n-k:]) >= cLast {
				hits++
			}
		}
		return float64(hits) / mdeReps
	}
	lo, hi := 0.0, 8.0
	for hi-lo > 0.001 {
		mid := (lo + hi) / 2
		if power(mid) >= mdePower {
			hi = mid
		} else {
			lo = mid
		}
	}
	shifts.Store(key, hi)
	return hi
}

// tPlus is the signed-rank statistic of d (no zeros or ties: normal draws).
func tPlus(d []float64) int {
	idx := make([]int, len(d))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		x, y := math.Abs(d[a]), math.Abs(d[b])
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	t := 0
	for rank, i := range idx {
		if d[i] > 0 {
			t += rank + 1
		}
	}
	return t
}
