package stats

import "math"

// Jain is Jain's fairness index of the shares xs (each client's
// throughput): (Σx)² / (n·Σx²). It is 1 when every share is equal and 1/n
// when one of n takes everything; a share of zero counts (a starved
// client is unfair). It returns NaN for no shares, a negative share or
// shares that are all zero: there is nothing to be fair about, and NaN
// cannot pass for a measured index.
func Jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			return math.NaN()
		}
		sum += x
		sq += x * x
	}
	if len(xs) == 0 || sq == 0 {
		return math.NaN()
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// Shares is N clients' throughputs loaded at once, reduced: their sum
// (the aggregate), the per-client order statistics and Jain's index. N is
// the number of clients measured; N == 0 means none and the rest is not a
// measurement. Missing counts the clients loaded but not measured (a
// stalled stream): then Aggregate is only a lower bound (the measured
// clients' sum) and Fairness is NaN, as an index over the clients that
// happened to finish is not the index of the N loaded.
type Shares struct {
	Aggregate float64
	PerClient Summary
	Fairness  float64
	N         int
	Missing   int
}

// SummarizeShares reduces the clients' throughputs xs. xs is not modified.
func SummarizeShares(xs []float64) Shares {
	if len(xs) == 0 {
		return Shares{Fairness: math.NaN()}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return Shares{Aggregate: sum, PerClient: Summarize(xs), Fairness: Jain(xs), N: len(xs)}
}

// SummarizeClients reduces the rates xs of the clients measured among n
// loaded at once (SummarizeShares), marking the n − len(xs) not measured
// as Missing: their fairness is not computed.
func SummarizeClients(n int, xs []float64) Shares {
	s := SummarizeShares(xs)
	if s.Missing = max(n-len(xs), 0); s.Missing > 0 {
		s.Fairness = math.NaN()
	}
	return s
}

// PerAdded is the least-squares slope of ys against ns: what each added
// client costs (memory, CPU) over the counts measured. It needs two
// distinct counts; otherwise, or when the lengths differ, it returns NaN.
func PerAdded(ns []int, ys []float64) float64 {
	if len(ns) != len(ys) || len(ns) < 2 {
		return math.NaN()
	}
	var mx, my float64
	for i := range ns {
		mx += float64(ns[i])
		my += ys[i]
	}
	mx /= float64(len(ns))
	my /= float64(len(ns))
	var sxy, sxx float64
	for i := range ns {
		dx := float64(ns[i]) - mx
		sxy += dx * (ys[i] - my)
		sxx += dx * dx
	}
	if sxx == 0 {
		return math.NaN()
	}
	return sxy / sxx
}
