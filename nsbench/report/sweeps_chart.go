package report

import (
	"fmt"
	"slices"

	"github.com/twnsbench/twnsbench/nsbench/report/svg"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// SweepsChart draws every size sweep of d: a panel per condition and
// curve, a line per transport through its medians at each size. It
// returns nil when no sample carries a sweep.
func SweepsChart(d *results.Document, theme Theme) []byte {
	if d == nil {
		return nil
	}
	return sweepsChart(newView(d), theme, "")
}

// Size sweep layout, in SVG units.
const (
	swPanelH    = 250.0
	swCols      = 2
	swPlotLeft  = 52.0 // room for the y tick labels
	swLegendRow = 22.0
)

type swChart struct{ canvas }

func sweepsChart(v *view, theme Theme, idPrefix string) []byte {
	curves := allSweepCurves(v)
	if len(curves) == 0 {
		return nil
	}
	c := &swChart{newCanvas(v, theme, idPrefix)}
	rows := (len(curves) + swCols - 1) / swCols
	height := headerHeight + swLegendRow + float64(rows)*(swPanelH+panelGap) + footerHeight
	title := "Size sweeps — " + v.title()
	c.open(height, title, "Line plots of "+title+": one panel per curve and condition, one line per transport through the medians of its runs at each size.")
	c.legend(headerHeight + 8)
	pw := (chartWidth - 2*chartMargin - float64(swCols-1)*panelGap) / swCols
	for i, cv := range curves {
		x := chartMargin + float64(i%swCols)*(pw+panelGap)
		y := headerHeight + swLegendRow + float64(i/swCols)*(swPanelH+panelGap)
		c.panel(cv, x, y, pw)
	}
	c.Text(chartMargin, height-chartMargin/2-14, 12, "", c.Pal.Muted, "",
		"x: the sizes measured, evenly spaced (not to scale); y from 0. Each point is the median of the runs at that size.")
	c.Printf("</svg>\n")
	return c.Bytes()
}

// legend names every transport that has a curve, in report order.
func (c *swChart) legend(y float64) {
	var shown []string
	for _, cv := range allSweepCurves(c.v) {
		for _, r := range cv.rows {
			if !slices.Contains(shown, r.transport) {
				shown = append(shown, r.transport)
			}
		}
	}
	x := chartMargin
	for _, t := range c.v.order {
		if !slices.Contains(shown, t) {
			continue
		}
		label := c.v.label(t)
		c.LegendEntry(x, y, c.transportColor(t), c.transportDash(t), label)
		x += 24 + svg.TextWidth(label, 11) + 18
	}
}

// panel draws one curve: the sizes on x, a line per transport.
func (c *swChart) panel(cv sweepCurve, x, y, w float64) {
	p := svg.SweepPanel{ID: idSafe(cv.condition + "-" + cv.instrument + "-" + cv.curve), Title: cv.instrument + ": " + cv.curve,
		Note:     fmt.Sprintf("%s · %s · %s is better", c.conditionLabel(cv.condition), cv.unit, dashIfEmpty(cv.better)),
		PlotLeft: swPlotLeft}
	for _, pt := range cv.points {
		p.Sizes = append(p.Sizes, sizeHeader(pt.At))
	}
	for _, r := range cv.rows {
		ms, ok := r.medians()
		l := svg.Line{Key: r.transport, Color: c.transportColor(r.transport)}
		for i := range ms {
			if ok[i] {
				p.Top = max(p.Top, ms[i])
				l.X, l.Y = append(l.X, float64(i)), append(l.Y, ms[i])
			}
		}
		p.Lines = append(p.Lines, l)
	}
	p.Draw(&c.Canvas, x, y, w, swPanelH)
}
