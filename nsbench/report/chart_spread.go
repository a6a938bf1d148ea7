package report

import (
	"slices"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// What a bar's whisker means is decided here and only here: the chart asks
// a spreadSource for every bar.

// spread is what one bar shows: the centre it is drawn to, the span of its
// whisker, and the number of runs behind it. level is the whisker's
// confidence level when it is a confidence interval, 0 when it is the
// min–max range. n == 0 means no data.
type spread struct {
	center, lo, hi float64
	level          float64
	n              int
	// atLeast: center is a lower bound (censored runs); hiAtLeast: hi is.
	atLeast, hiAtLeast bool
}

// metricKey names one cell's metric as results.Cell does.
type metricKey struct{ transport, condition, instrument, metric string }

// spreadSource reduces one cell's per-run readings (never empty) to a
// spread.
type spreadSource interface {
	spread(k metricKey, rs []results.Reading) spread
}

// spreadFor is the chart's source of whiskers for d: the confidence
// intervals of d.Cells where the document carries them (documents written
// since cells[] exist), else the min–max range of the runs (the reference
// harness's documents).
func spreadFor(d *results.Document) spreadSource {
	if len(d.Cells) == 0 {
		return minMaxSpread{}
	}
	cs := cellSpread{cells: map[metricKey]results.Cell{}}
	for _, c := range d.Cells {
		cs.cells[metricKey{c.Transport, c.Condition, c.Instrument, c.Metric}] = c
	}
	return cs
}

// minMaxSpread is the median with the min–max range of the runs.
type minMaxSpread struct{}

func (minMaxSpread) spread(_ metricKey, rs []results.Reading) spread {
	s := stats.Summarize(results.ValuesOf(rs))
	return spread{center: s.Median, lo: s.Min, hi: s.Max, n: s.N,
		atLeast: results.MedianAtLeast(rs), hiAtLeast: results.Censored(rs) > 0}
}

// cellSpread is the median with its confidence interval, read from the
// document's cells. A cell that is missing, or that summarises a different
// number of runs than the samples hold (a document edited by hand), falls
// back to the min–max range: the chart never mixes a cell's interval with
// other samples' median.
type cellSpread struct{ cells map[metricKey]results.Cell }

func (cs cellSpread) spread(k metricKey, rs []results.Reading) spread {
	c, ok := cs.cells[k]
	if !ok || c.N != len(rs) || c.Censored != results.Censored(rs) {
		return minMaxSpread{}.spread(k, rs)
	}
	return spread{center: c.Median, lo: c.CILow, hi: c.CIHigh, level: c.CILevel, n: c.N,
		atLeast: c.MedianAtLeast(), hiAtLeast: slices.Contains(c.LowerBounds, results.BoundCIHigh)}
}
