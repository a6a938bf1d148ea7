package stats

import (
	"math"
	"sort"
)

// MannWhitney is the two-sided Mann-Whitney U test of whether xs and ys
// come from distributions with different locations. It assumes nothing
// about the distributions, which suits the few, often skewed samples of a
// benchmark (benchstat uses it for the same reason). Without ties the
// p-value is exact; with ties it uses the normal approximation with tie
// and continuity corrections. It returns p = 1 when either side is empty.
func MannWhitney(xs, ys []float64) (u, p float64) {
	n1, n2 := len(xs), len(ys)
	if n1 == 0 || n2 == 0 {
		return 0, 1
	}
	ranks, ties := rankAll(xs, ys)
	r1 := 0.0
	for i := 0; i < n1; i++ {
		r1 += ranks[i]
	}
	u1 := r1 - float64(n1*(n1+1))/2
	u2 := float64(n1*n2) - u1
	u = math.Min(u1, u2)
	if !ties && n1*n2 <= 10000 {
		return u, math.Min(1, 2*exactCDF(n1, n2, int(math.Round(u))))
	}
	return u, normalP(u, n1, n2, tieTerm(xs, ys))
}

// rankAll ranks the pooled samples (average ranks for ties); the first
// len(xs) ranks belong to xs.
func rankAll(xs, ys []float64) (ranks []float64, ties bool) {
	type obs struct {
		v float64
		i int
	}
	all := make([]obs, 0, len(xs)+len(ys))
	for i, v := range xs {
		all = append(all, obs{v, i})
	}
	for i, v := range ys {
		all = append(all, obs{v, len(xs) + i})
	}
	sort.Slice(all, func(a, b int) bool { return all[a].v < all[b].v })
	ranks = make([]float64, len(all))
	for i := 0; i < len(all); {
		j := i
		for j+1 < len(all) && all[j+1].v == all[i].v {
			j++
		}
		if j > i {
			ties = true
		}
		r := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			ranks[all[k].i] = r
		}
		i = j + 1
	}
	return ranks, ties
}

// exactCDF is P(U ≤ u) under the null hypothesis, counting the rank
// arrangements with a given U (the classic recursion on the largest
// observation).
func exactCDF(n1, n2, u int) float64 {
	// counts[a][b][k]: arrangements of a x's and b y's with U = k.
	maxU := n1 * n2
	prev := make([][]float64, n2+1) // row a-1
	cur := make([][]float64, n2+1)
	for b := 0; b <= n2; b++ {
		prev[b] = make([]float64, maxU+1)
		prev[b][0] = 1 // a = 0: one arrangement, U = 0
	}
	for a := 1; a <= n1; a++ {
		for b := 0; b <= n2; b++ {
			cur[b] = make([]float64, maxU+1)
			for k := 0; k <= maxU; k++ {
				// the largest observation is an x (adds b to U) or a y
				if k-b >= 0 {
					cur[b][k] += prev[b][k-b]
				}
				if b > 0 {
					cur[b][k] += cur[b-1][k]
				}
			}
		}
		prev, cur = cur, prev
	}
	total, below := 0.0, 0.0
	for k, c := range prev[n2] {
		total += c
		if k <= u {
			below += c
		}
	}
	return below / total
}

func tieTerm(xs, ys []float64) float64 {
	all := append(append([]float64(nil), xs...), ys...)
	sort.Float64s(all)
	t := 0.0
	for i := 0; i < len(all); {
		j := i
		for j+1 < len(all) && all[j+1] == all[i] {
			j++
		}
		c := float64(j - i + 1)
		t += c*c*c - c
		i = j + 1
	}
	return t
}

func normalP(u float64, n1, n2 int, tie float64) float64 {
	n := float64(n1 + n2)
	mu := float64(n1*n2) / 2
	sigma := math.Sqrt(float64(n1*n2) / 12 * ((n + 1) - tie/(n*(n-1))))
	if sigma == 0 {
		return 1
	}
	z := (math.Abs(u-mu) - 0.5) / sigma
	if z < 0 {
		z = 0
	}
	return math.Min(1, math.Erfc(z/math.Sqrt2))
}
