package verdict

import (
	"math"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// Record is r as the results document keeps it: everything a reader of
// the verdict needs (the report, the CI files, the exit code) without
// deciding again — the estimate and its interval, the pairs it stood on,
// the medians of the readings it used. A figure that could not be
// computed is absent. The rows (A, B) and whether --fail-on counts the
// cell are the run's to fill.
func (r Result) Record() results.Verdict {
	as, bs, _, _ := r.Cell.Readings()
	m := results.Medians{AMedian: finite(stats.Median(as)), BMedian: finite(stats.Median(bs))}
	if ci := stats.MedianCI(bs, 0.95); ci.Reached {
		m.BMedianLo, m.BMedianHi = finite(ci.Low), finite(ci.High)
	}
	return results.Verdict{
		VerdictCell: results.VerdictCell{Transport: r.Transport, Condition: r.Condition, Instrument: r.Instrument,
			Metric: r.Metric, Unit: r.Unit, Better: r.Better},
		Estimate: results.Estimate{Scale: string(r.Scale), Ratio: finite(r.Ratio), Lo: finite(r.Lo), Hi: finite(r.Hi),
			Delta: finite(r.Delta), DeltaLo: finite(r.DeltaLo), DeltaHi: finite(r.DeltaHi), P: finite(r.P), Q: finite(r.Q), MDE: finite(r.MDE)},
		Medians:        m,
		HostAdjustment: results.HostAdjustment{NoiseSlope: finite(r.Slope), MDEUnadjusted: finite(r.UnadjustedMDE)},
		PairCounts:     results.PairCounts{Pairs: r.N, Censored: r.Censored, Bounded: r.Bounded},
		MinEffect:      r.MinEffect,
		Verdict:        string(r.Verdict), Reason: r.Reason,
	}
}

// finite is x, or nil (absent) when it is not a number.
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}
