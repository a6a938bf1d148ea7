package stats

import "math"

// Wilson is the Wilson score interval of a binomial proportion k/n at z
// standard deviations; (0, 1) when n is 0.
func Wilson(k, n uint64, z float64) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	nf := float64(n)
	p := float64(k) / nf
	z2 := z * z
	mid := (p + z2/(2*nf)) / (1 + z2/nf)
	half := z / (1 + z2/nf) * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	lo, hi = max(0, mid-half), min(1, mid+half)
	// At k = 0 (k = n) the bound is 0 (1) exactly; rounding can leave it a
	// hair inside, and a configured 0 % loss outside its own interval.
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return lo, hi
}
