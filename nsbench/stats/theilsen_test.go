package stats

import (
	"math"
	"testing"
)

func TestTheilSen(t *testing.T) {
	// On a line, the line's slope; one wild point does not move it.
	x := []float64{0, 1, 2, 3, 4, 5, 6}
	y := []float64{1, 3, 5, 7, 9, 11, 13}
	if got := TheilSen(x, y); got != 2 {
		t.Errorf("line: %v, want 2", got)
	}
	y[3] = 100
	if got := TheilSen(x, y); got != 2 {
		t.Errorf("one wild point: %v, want 2 (least squares gives %.2f)", got, leastSquares(x, y))
	}
	// Three points, three slopes (1, 2, 3): the middle one.
	if got := TheilSen([]float64{0, 1, 2}, []float64{0, 1, 4}); got != 2 {
		t.Errorf("three points: %v, want the median of 1, 2, 3", got)
	}
	// Four points, six slopes (0, ½, 1, 4/3, 3/2, 3): the mean of the middle two.
	if got := TheilSen([]float64{0, 1, 2, 3}, []float64{0, 1, 1, 4}); math.Abs(got-7.0/6) > 1e-12 {
		t.Errorf("four points: %v, want (1 + 4/3)/2", got)
	}
	for name, c := range map[string][2][]float64{
		"one x":     {{2, 2, 2}, {1, 2, 3}},
		"lengths":   {{1, 2}, {1}},
		"no points": {nil, nil},
	} {
		if got := TheilSen(c[0], c[1]); !math.IsNaN(got) {
			t.Errorf("%s: %v, want NaN", name, got)
		}
	}
}

func leastSquares(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i] / float64(len(x))
		my += y[i] / float64(len(y))
	}
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	return sxy / sxx
}
