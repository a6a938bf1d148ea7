// Package stats holds the order statistics the report shows: median, min and
// max of a cell's runs. It is pure: no I/O, no dependencies.
package stats

import (
	"math"
	"slices"
)

// Summary is a cell's runs reduced to what the report prints. N is the
// number of values summarised; N == 0 means there were none and the other
// fields are zero, not measurements — callers must check N.
type Summary struct {
	Median, Min, Max float64
	N                int
}

// Summarize reduces xs to its median, min and max. An empty xs gives the
// zero Summary (N == 0). xs is not modified.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := sortedCopy(xs)
	return Summary{Median: medianSorted(s), Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Median returns the middle value of xs; for an even count, the mean of the
// two middle values. It returns NaN for an empty xs: a bare float has no N
// to check, and NaN cannot pass for a measured value. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return medianSorted(sortedCopy(xs))
}

// Min returns the smallest value of xs, or NaN for an empty xs.
func Min(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return slices.Min(xs)
}

// Max returns the largest value of xs, or NaN for an empty xs.
func Max(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return slices.Max(xs)
}

// sortedCopy sorts a copy so that the caller's slice (often a view into a
// results document) keeps its run order.
func sortedCopy(xs []float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}

// medianSorted expects a sorted, non-empty slice.
func medianSorted(s []float64) float64 {
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of xs, interpolating linearly
// between the order statistics around rank q·(n−1) (the common "type 7"
// definition, numpy's default): Quantile(xs, 0.5) is Median(xs). It
// returns NaN for an empty xs or a q outside [0, 1]. xs is not modified.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 || q < 0 || q > 1 || math.IsNaN(q) {
		return math.NaN()
	}
	s := sortedCopy(xs)
	rank := q * float64(len(s)-1)
	lo := int(math.Floor(rank))
	if lo == len(s)-1 {
		return s[lo]
	}
	frac := rank - float64(lo)
	return s[lo] + frac*(s[lo+1]-s[lo])
}
