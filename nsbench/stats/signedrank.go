package stats

import (
	"math"
	"sort"
	"sync"
)

// ExactSignedRankMax is the largest number of differences whose signed-rank
// distribution is counted exactly (by convolution over the 2^n sign
// assignments); above it the normal approximation with continuity
// correction stands in, as R's wilcox.test does above 50.
const ExactSignedRankMax = 50

// SignedRank is Wilcoxon's signed-rank test of whether paired differences
// are centred on 0. Zeros are dropped (Wilcoxon's rule) and tied absolute
// values share their mean rank; the exact null distribution is then that of
// the ranks actually present (the permutation distribution), so ties need
// no correction. The normal approximation corrects its variance for ties.
type SignedRank struct {
	N     int     // nonzero differences ranked
	TPlus float64 // the sum of the positive differences' ranks
	PLess float64 // P(T+ ≤ TPlus) under the null: evidence of a shift below 0
	PMore float64 // P(T+ ≥ TPlus): evidence of a shift above 0
	Exact bool    // counted exactly (N ≤ ExactSignedRankMax), else approximated
}

// P is the two-sided p-value, at most 1. With no nonzero difference it is 1.
func (s SignedRank) P() float64 {
	return math.Min(1, 2*math.Min(s.PLess, s.PMore))
}

// WilcoxonSignedRank tests d, the per-pair differences. d is not modified.
func WilcoxonSignedRank(d []float64) SignedRank {
	var abs []float64
	var pos []bool
	for _, x := range d {
		if x != 0 {
			abs = append(abs, math.Abs(x))
			pos = append(pos, x > 0)
		}
	}
	n := len(abs)
	if n == 0 {
		return SignedRank{PLess: 1, PMore: 1, Exact: true}
	}
	ranks2, ties := doubledMidranks(abs)
	t2 := 0
	for i, r := range ranks2 {
		if pos[i] {
			t2 += r
		}
	}
	s := SignedRank{N: n, TPlus: float64(t2) / 2}
	if n <= ExactSignedRankMax {
		dist := untiedDist(n)
		if ties > 0 {
			dist = signedRankDist(ranks2)
		}
		for sum, p := range dist {
			if sum <= t2 {
				s.PLess += p
			}
			if sum >= t2 {
				s.PMore += p
			}
		}
		s.PLess, s.PMore, s.Exact = math.Min(1, s.PLess), math.Min(1, s.PMore), true
		return s
	}
	fn := float64(n)
	mu := fn * (fn + 1) / 4
	sd := math.Sqrt(fn*(fn+1)*(2*fn+1)/24 - ties/48)
	s.PLess = normalCDF((s.TPlus - mu + 0.5) / sd)
	s.PMore = 1 - normalCDF((s.TPlus-mu-0.5)/sd)
	return s
}

// doubledMidranks ranks xs (all > 0) from 1, ties sharing their mean rank,
// and returns twice each rank (an integer) and Σ(t³ − t) over the groups of
// t tied values.
func doubledMidranks(xs []float64) ([]int, float64) {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	r2 := make([]int, len(xs))
	var ties float64
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && xs[idx[j+1]] == xs[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r2[idx[k]] = (i + 1) + (j + 1) // twice the mean of ranks i+1 … j+1
		}
		t := float64(j - i + 1)
		ties += t*t*t - t
		i = j + 1
	}
	return r2, ties
}

// signedRankDist is the null distribution of the sum of the (doubled)
// ranks given a + sign: each rank's sign is + or − with probability ½.
// dist[s] is the probability of the doubled sum s.
func signedRankDist(ranks2 []int) []float64 {
	total := 0
	for _, r := range ranks2 {
		total += r
	}
	dist := make([]float64, total+1)
	dist[0] = 1
	top := 0
	for _, r := range ranks2 {
		top += r
		for s := top; s >= 0; s-- {
			with := 0.0
			if s >= r {
				with = dist[s-r]
			}
			dist[s] = (dist[s] + with) / 2
		}
	}
	return dist
}

// untied caches signedRankDist of the ranks 1…n, by n.
var untied sync.Map

// untiedDist is the null distribution of the doubled T+ for n untied
// ranks (shared: do not modify).
func untiedDist(n int) []float64 {
	if d, ok := untied.Load(n); ok {
		return d.([]float64)
	}
	ranks := make([]int, n)
	for i := range ranks {
		ranks[i] = 2 * (i + 1)
	}
	d := signedRankDist(ranks)
	untied.Store(n, d)
	return d
}

func normalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// walsh returns the n(n+1)/2 Walsh averages (dᵢ + dⱼ)/2, i ≤ j, sorted.
func walsh(d []float64) []float64 {
	w := make([]float64, 0, len(d)*(len(d)+1)/2)
	for i := range d {
		for j := i; j < len(d); j++ {
			w = append(w, (d[i]+d[j])/2)
		}
	}
	sort.Float64s(w)
	return w
}

// HodgesLehmann is the median of the Walsh averages of d: the estimate of
// the centre of the differences that goes with the signed-rank test. NaN
// for no values.
func HodgesLehmann(d []float64) float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	return medianSorted(walsh(d))
}

// SignedRankCI is the distribution-free interval for the centre of d that
// inverts the signed-rank test (Tukey; Hollander & Wolfe): of the M sorted
// Walsh averages, [W(k), W(M+1−k)] with k the largest such that, for n
// untied ranks, P(T ≤ k−1) ≤ (1−level)/2. k is counted exactly for n ≤
// ExactSignedRankMax and taken from the normal approximation with
// continuity correction above (k = ⌊μ − z·σ + ½⌋). Level states the
// interval's exact coverage (approximate above the switch). With too few
// values for any such k (fewer than 6 at 95 %) Reached is false and the
// bounds are NaN.
func SignedRankCI(d []float64, level float64) Interval {
	_, ci := HodgesLehmannCI(d, level)
	return ci
}

// HodgesLehmannCI is HodgesLehmann and SignedRankCI of d together, from
// one sorting of the Walsh averages.
func HodgesLehmannCI(d []float64, level float64) (float64, Interval) {
	n := len(d)
	if n == 0 {
		return math.NaN(), Interval{Low: math.NaN(), High: math.NaN(), Level: math.NaN()}
	}
	tail := (1 - level) / 2
	k, cov := 0, math.NaN()
	if n <= ExactSignedRankMax {
		dist := untiedDist(n) // over doubled sums: even indices only
		var below float64     // P(T ≤ k−1)
		for k = 0; ; k++ {
			next := below + dist[2*k] // P(T ≤ k)
			if next > tail {
				break
			}
			below = next
		}
		cov = 1 - 2*below
	} else if n > ExactSignedRankMax {
		fn := float64(n)
		mu, sd := fn*(fn+1)/4, math.Sqrt(fn*(fn+1)*(2*fn+1)/24)
		z := -normalQuantile(tail)
		k = int(math.Floor(mu - z*sd + 0.5))
		cov = 1 - 2*normalCDF((float64(k)-1+0.5-mu)/sd)
	}
	w := walsh(d)
	if k < 1 {
		return medianSorted(w), Interval{Low: math.NaN(), High: math.NaN(), Level: cov}
	}
	return medianSorted(w), Interval{Low: w[k-1], High: w[len(w)-k], Level: cov, Reached: true}
}

// normalQuantile is Φ⁻¹(p) for 0 < p < 1.
func normalQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }

// SignedRankCritical is the smallest c with P(T+ ≥ c) ≤ tail for n untied
// nonzero differences under the null: the signed-rank test at one-sided
// level tail rejects when T+ ≥ c (and, by symmetry, when T+ ≤ n(n+1)/2 −
// c). Exact for n ≤ ExactSignedRankMax, the normal approximation with
// continuity correction above. It is n(n+1)/2 + 1 when no T+ is extreme
// enough (n too small for the level).
func SignedRankCritical(n int, tail float64) int {
	total := n * (n + 1) / 2
	if n > ExactSignedRankMax {
		fn := float64(n)
		mu, sd := fn*(fn+1)/4, math.Sqrt(fn*(fn+1)*(2*fn+1)/24)
		// P(T+ ≥ c) ≈ 1 − Φ((c − ½ − μ)/σ) ≤ tail.
		return min(total+1, int(math.Ceil(mu+0.5-sd*normalQuantile(tail))))
	}
	dist := untiedDist(n)
	var above float64 // P(T+ ≥ c)
	c := total + 1
	for ; c > 0; c-- {
		next := above + dist[2*(c-1)]
		if next > tail {
			break
		}
		above = next
	}
	return c
}
