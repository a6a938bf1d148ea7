package stats

import "slices"

// BenjaminiHochberg adjusts ps for being tested together: with m tests,
// the i-th smallest p becomes min over j ≥ i of m·p(j)/j, at most 1.
// Calling the rows whose adjusted value is below α significant keeps the
// expected share of false discoveries among them at α or below
// (independent or positively dependent tests). Each cell's own test alone
// would call about m·α of m unchanged cells significant by chance.
func BenjaminiHochberg(ps []float64) []float64 {
	m := len(ps)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case ps[a] < ps[b]:
			return -1
		case ps[a] > ps[b]:
			return 1
		}
		return 0
	})
	qs := make([]float64, m)
	least := 1.0
	for rank := m; rank >= 1; rank-- {
		i := idx[rank-1]
		least = min(least, ps[i]*float64(m)/float64(rank))
		qs[i] = least
	}
	return qs
}
