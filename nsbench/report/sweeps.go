package report

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// sweeps.go renders the size sweeps: an instrument's metrics declared as
// points of a curve (results.Metric Curve and At) become one table per
// condition and curve (a row per transport, a column per size) and one
// panel of the sizes chart (a line per transport through the medians).

// Size sweep chart file names, beside the report.
const (
	SweepsFile     = "bench-sizes.svg"
	SweepsDarkFile = "bench-sizes-dark.svg"
)

// sweepCurve is one curve of one instrument under one condition: its
// points' metrics in size order and each transport's values per point.
type sweepCurve struct {
	condition, instrument, curve string
	unit, better                 string
	points                       []results.Metric
	rows                         []sweepRow // transports measured in the cell, in report order
}

// sweepRow is a transport's values at each point (the runs' readings).
type sweepRow struct {
	transport string
	values    [][]float64
}

// medians are the row's median per point; ok is false where none was
// measured.
func (r sweepRow) medians() (ms []float64, ok []bool) {
	for _, xs := range r.values {
		s := stats.Summarize(xs)
		ms, ok = append(ms, s.Median), append(ok, s.N > 0)
	}
	return ms, ok
}

// sweepCurves are condition's curves in the instruments' declaration
// order, then the curves' first appearance; a curve no transport measured
// is left out.
func sweepCurves(v *view, condition string) []sweepCurve {
	var out []sweepCurve
	for _, in := range v.doc.Instruments {
		var curves []string
		byCurve := map[string][]results.Metric{}
		for _, m := range in.Metrics {
			if m.Curve == "" || m.At <= 0 {
				continue
			}
			if _, ok := byCurve[m.Curve]; !ok {
				curves = append(curves, m.Curve)
			}
			byCurve[m.Curve] = append(byCurve[m.Curve], m)
		}
		for _, name := range curves {
			pts := byCurve[name]
			slices.SortStableFunc(pts, func(a, b results.Metric) int { return a.At - b.At })
			c := sweepCurve{condition: condition, instrument: in.Name, curve: name, unit: pts[0].Unit, better: pts[0].Better, points: pts}
			for _, t := range v.order {
				ss := v.samples(t, condition, in.Name)
				if len(ss) == 0 {
					continue
				}
				row, any := sweepRow{transport: t}, false
				for _, p := range pts {
					var xs []float64
					for _, s := range ss {
						if x, ok := s.Metric(p.Key); ok {
							xs = append(xs, x)
						}
					}
					row.values, any = append(row.values, xs), any || len(xs) > 0
				}
				if any {
					c.rows = append(c.rows, row)
				}
			}
			if len(c.rows) > 0 {
				out = append(out, c)
			}
		}
	}
	return out
}

// allSweepCurves are every condition's curves, in the conditions' order.
func allSweepCurves(v *view) []sweepCurve {
	var out []sweepCurve
	for _, c := range v.doc.Conditions {
		out = append(out, sweepCurves(v, c.Name)...)
	}
	return out
}

// sizeHeader names a point's column: "64 B", "16 KiB".
func sizeHeader(b int) string {
	if b >= 1024 && b%1024 == 0 {
		return strconv.Itoa(b/1024) + " KiB"
	}
	return strconv.Itoa(b) + " B"
}

// writeSweeps renders condition's curves: per curve, the median (min–max)
// of the runs at each size.
func writeSweeps(w *writer, v *view, c results.Condition) {
	curves := sweepCurves(v, c.Name)
	if len(curves) == 0 {
		return
	}
	w.block("## Size sweeps — " + v.conditionLabel(c.Name))
	w.block("Each instrument of the sizes set runs its tool once per size in one sample; a cell is the median of the runs at that size, " +
		"with (min–max). The lines of the sizes chart (" + SweepsFile + ") join the medians.")
	for _, cv := range curves {
		w.block(fmt.Sprintf("### %s: %s (%s, %s is better)", cv.instrument, cv.curve, cv.unit, dashIfEmpty(cv.better)))
		header := []string{"Transport"}
		for _, p := range cv.points {
			header = append(header, sizeHeader(p.At))
		}
		lines := []string{tableRow(header...), separatorRow(len(header))}
		for _, r := range cv.rows {
			row := []string{v.label(r.transport)}
			for _, xs := range r.values {
				row = append(row, rangeCell(xs, autoPrec(xs), v.fullRuns()))
			}
			lines = append(lines, tableRow(row...))
		}
		w.block(lines...)
	}
}
