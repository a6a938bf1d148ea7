package report

import (
	"strings"
)

// plot.go draws line and point plots on the chart canvas: a frame with
// linear axes that start at zero, grid lines and tick labels. The time
// series and the latency CDF are drawn with it.

// axis is one linear axis from 0 to max with a tick every step.
type axis struct{ max, step float64 }

// niceAxis is an axis reaching at least m (see niceScale).
func niceAxis(m float64) axis {
	top, step := niceScale(m)
	return axis{top, step}
}

// frame is a plot's drawing area in SVG units (y grows downwards) and
// the axes mapped onto it.
type frame struct {
	x, y, w, h float64
	xs, ys     axis
}

func (f frame) px(v float64) float64 { return f.x + f.w*clamp01(v/f.xs.max) }
func (f frame) py(v float64) float64 { return f.y + f.h - f.h*clamp01(v/f.ys.max) }

func clamp01(x float64) float64 { return min(1, max(0, x)) }

// axes draws the frame's grid and tick labels: y labels left of it, x
// labels under it.
func (c *chart) axes(f frame) {
	c.printf(`<rect class="plot-area" x="%s" y="%s" width="%s" height="%s" fill="none" stroke="%s" stroke-width="1"/>`+"\n",
		n1(f.x), n1(f.y), n1(f.w), n1(f.h), c.pal.grid)
	for i := 0; float64(i)*f.ys.step <= f.ys.max*(1+1e-9); i++ {
		v := float64(i) * f.ys.step
		y := f.py(v)
		c.printf(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="0.5"/>`+"\n",
			n1(f.x), n1(y), n1(f.x+f.w), n1(y), c.pal.grid)
		c.text(f.x-4, y+3.5, 10, "", c.pal.muted, "end", tickLabel(v, f.ys.step))
	}
	for i := 0; float64(i)*f.xs.step <= f.xs.max*(1+1e-9); i++ {
		v := float64(i) * f.xs.step
		x := f.px(v)
		c.printf(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="0.5"/>`+"\n",
			n1(x), n1(f.y), n1(x), n1(f.y+f.h), c.pal.grid)
		c.text(x, f.y+f.h+13, 10, "", c.pal.muted, "middle", tickLabel(v, f.xs.step))
	}
}

// polyline joins the points (xs[i], ys[i]) in order, with a dot on each
// point when there are few enough to tell apart.
func (c *chart) polyline(f frame, xs, ys []float64, color string) {
	var pts []string
	for i := range xs {
		pts = append(pts, n1(f.px(xs[i]))+","+n1(f.py(ys[i])))
	}
	c.printf(`<polyline class="series" points="%s" fill="none" stroke="%s" stroke-width="1.5" stroke-linejoin="round"/>`+"\n",
		strings.Join(pts, " "), color)
	if len(xs) > 60 {
		return
	}
	for i := range xs {
		c.printf(`<circle class="point" cx="%s" cy="%s" r="2.2" fill="%s"/>`+"\n", n1(f.px(xs[i])), n1(f.py(ys[i])), color)
	}
}

// legendEntry draws a label right-aligned at x, with its colour square
// left of it.
func (c *chart) legendEntry(x, y float64, color, label string) {
	c.text(x, y, 10.5, "", c.pal.text, "end", label)
	c.printf(`<rect class="swatch" x="%s" y="%s" width="9" height="9" rx="2" fill="%s"/>`+"\n",
		n1(x-textWidth(label, 10.5)-13), n1(y-8), color)
}

// figureNote writes a muted line of text; long lines are cut to the width.
func (c *chart) figureNote(x, y, width float64, s string) {
	c.text(x, y, 11.5, "", c.pal.muted, "", truncate(s, width, 11.5))
}
