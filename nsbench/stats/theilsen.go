package stats

import (
	"math"
	"slices"
)

// TheilSen is the Theil–Sen slope of y on x: the median of the slopes
// (yⱼ − yᵢ)/(xⱼ − xᵢ) over every pair of points with xᵢ ≠ xⱼ. A few wild
// points move it little, where they would pull a least-squares slope. NaN
// when no two points differ in x, or the lengths differ.
func TheilSen(x, y []float64) float64 {
	if len(x) != len(y) {
		return math.NaN()
	}
	var slopes []float64
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			if dx := x[j] - x[i]; dx != 0 {
				slopes = append(slopes, (y[j]-y[i])/dx)
			}
		}
	}
	if len(slopes) == 0 {
		return math.NaN()
	}
	slices.Sort(slopes)
	n := len(slopes)
	if n%2 == 1 {
		return slopes[n/2]
	}
	return (slopes[n/2-1] + slopes[n/2]) / 2
}
