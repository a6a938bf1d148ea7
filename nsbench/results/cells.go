package results

import (
	"fmt"

	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// CIMethod names how Cell intervals are computed, for the report.
const CIMethod = "distribution-free confidence interval of the median from order statistics " +
	"(the interval between the k-th smallest and k-th largest run; benchstat's method)"

// Cell summarises one metric of one transport × condition × instrument over
// its runs. The raw samples stay in Samples; cells are derived from them.
type Cell struct {
	Transport  string  `json:"transport"`
	Condition  string  `json:"condition"`
	Instrument string  `json:"instrument"`
	Metric     string  `json:"metric"` // "value", "p50_us" or "p99_us"
	N          int     `json:"n"`
	Median     float64 `json:"median"`
	Min        float64 `json:"min"`
	Max        float64 `json:"max"`
	// CILow..CIHigh covers the true median with probability CILevel. It is
	// the narrowest order-statistic interval reaching 95 %, or, with fewer
	// than 6 runs, [min, max] and its real (lower) level.
	CILow   float64 `json:"ci_low"`
	CIHigh  float64 `json:"ci_high"`
	CILevel float64 `json:"ci_level"`
	// CI95Low and CI95High are set only when a 95 % interval exists.
	CI95Low  *float64 `json:"ci95_low,omitempty"`
	CI95High *float64 `json:"ci95_high,omitempty"`
	Warning  string   `json:"warning,omitempty"`
}

// Cells summarises samples per transport, condition, instrument and metric,
// in first-appearance order.
func Cells(samples []Sample) []Cell {
	type key struct{ t, c, i, m string }
	var order []key
	values := map[key][]float64{}
	add := func(k key, v float64) {
		if _, ok := values[k]; !ok {
			order = append(order, k)
		}
		values[k] = append(values[k], v)
	}
	for _, s := range samples {
		add(key{s.Transport, s.Condition, s.Instrument, "value"}, s.Value)
		if s.P50Us != nil {
			add(key{s.Transport, s.Condition, s.Instrument, "p50_us"}, *s.P50Us)
		}
		if s.P99Us != nil {
			add(key{s.Transport, s.Condition, s.Instrument, "p99_us"}, *s.P99Us)
		}
	}
	cells := make([]Cell, 0, len(order))
	for _, k := range order {
		xs := values[k]
		sum := stats.Summarize(xs)
		ci := stats.MedianCI(xs, 0.95)
		c := Cell{
			Transport: k.t, Condition: k.c, Instrument: k.i, Metric: k.m,
			N: sum.N, Median: sum.Median, Min: sum.Min, Max: sum.Max,
			CILow: ci.Low, CIHigh: ci.High, CILevel: ci.Level,
		}
		if ci.Reached {
			c.CI95Low, c.CI95High = &ci.Low, &ci.High
		} else {
			c.Warning = fmt.Sprintf("%d runs: no 95 %% interval exists (needs at least %d); [min, max] covers the median with %.1f %%",
				sum.N, stats.MinSamplesFor(0.95), 100*ci.Level)
		}
		cells = append(cells, c)
	}
	return cells
}
