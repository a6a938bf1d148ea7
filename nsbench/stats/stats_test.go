package stats

import (
	"math"
	"slices"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want Summary
	}{
		{"odd", []float64{3, 1, 2}, Summary{Median: 2, Min: 1, Max: 3, N: 3}},
		{"even is mean of middle two", []float64{4, 1, 3, 2}, Summary{Median: 2.5, Min: 1, Max: 4, N: 4}},
		{"single", []float64{7.5}, Summary{Median: 7.5, Min: 7.5, Max: 7.5, N: 1}},
		{"unsorted with duplicates", []float64{5, 1, 5, 9, 1}, Summary{Median: 5, Min: 1, Max: 9, N: 5}},
		{"negative", []float64{-1, -3, -2}, Summary{Median: -2, Min: -3, Max: -1, N: 3}},
		{"empty is zero with N 0", nil, Summary{}},
		{"empty non-nil", []float64{}, Summary{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			got := Summarize(in)
			if got != tt.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", tt.in, got, tt.want)
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("Summarize modified its input: %v, was %v", in, tt.in)
			}
		})
	}
}

func TestMedianMinMax(t *testing.T) {
	tests := []struct {
		name             string
		in               []float64
		median, min, max float64
	}{
		{"odd", []float64{30510.75, 31055.62, 23558.23}, 30510.75, 23558.23, 31055.62},
		{"even", []float64{10, 40, 20, 30}, 25, 10, 40},
		{"single", []float64{1}, 1, 1, 1},
		{"two", []float64{2, 1}, 1.5, 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			if got := Median(in); got != tt.median {
				t.Errorf("Median = %v, want %v", got, tt.median)
			}
			if got := Min(in); got != tt.min {
				t.Errorf("Min = %v, want %v", got, tt.min)
			}
			if got := Max(in); got != tt.max {
				t.Errorf("Max = %v, want %v", got, tt.max)
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("input modified: %v, was %v", in, tt.in)
			}
		})
	}
}

// An empty input has no median: the bare-float functions say so with NaN
// rather than a zero that could be printed as a measurement.
func TestEmptyIsNaN(t *testing.T) {
	for name, f := range map[string]func([]float64) float64{"Median": Median, "Min": Min, "Max": Max} {
		if got := f(nil); !math.IsNaN(got) {
			t.Errorf("%s(nil) = %v, want NaN", name, got)
		}
	}
}

// TestQuantile: type-7 interpolation, the median at 0.5, the extremes at 0
// and 1, NaN where there is no answer.
func TestQuantile(t *testing.T) {
	xs := []float64{10, 1, 4, 3, 2} // sorted: 1 2 3 4 10
	for _, tc := range []struct{ q, want float64 }{
		{0, 1}, {0.5, 3}, {1, 10}, {0.9, 4 + 0.6*6}, {0.99, 4 + 0.96*6}, {0.25, 2},
	} {
		if got := Quantile(xs, tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Quantile(%v, %v) = %v, want %v", xs, tc.q, got, tc.want)
		}
	}
	if Quantile([]float64{1, 2, 3, 4}, 0.5) != Median([]float64{1, 2, 3, 4}) {
		t.Error("Quantile 0.5 differs from Median on an even count")
	}
	if Quantile([]float64{7}, 0.99) != 7 {
		t.Error("one value: every quantile is that value")
	}
	for _, bad := range []float64{-0.1, 1.1, math.NaN()} {
		if !math.IsNaN(Quantile(xs, bad)) {
			t.Errorf("q = %v: want NaN", bad)
		}
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("empty: want NaN")
	}
	if xs[0] != 10 {
		t.Error("input modified")
	}
}
