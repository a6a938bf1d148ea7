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
	Metric     string  `json:"metric"` // a declared metric's key: "value", "p50_us", "loss_pct", …
	Unit       string  `json:"unit,omitempty"`
	Better     string  `json:"better,omitempty"`
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

// Cells summarises d's samples per transport, condition, instrument and
// declared metric, in first-appearance order.
func Cells(d *Document) []Cell {
	order, values := d.MetricValues()
	cells := make([]Cell, 0, len(order))
	for _, k := range order {
		xs := values[k]
		sum := stats.Summarize(xs)
		ci := stats.MedianCI(xs, 0.95)
		m, _ := d.MetricOf(k.Instrument, k.Metric)
		c := Cell{
			Transport: k.Transport, Condition: k.Condition, Instrument: k.Instrument, Metric: k.Metric,
			Unit: m.Unit, Better: m.Better,
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
