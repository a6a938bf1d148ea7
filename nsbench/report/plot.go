package report

import (
	"fmt"
	"math"
	"strings"
)

// plot.go draws line and point plots on the chart canvas: a frame with
// linear axes that start at zero, grid lines and tick labels. The time
// series and the latency CDF are drawn with it.

// axis is one linear axis from min to max with a tick every step.
type axis struct{ min, max, step float64 }

// niceAxis is an axis from 0 reaching at least m (see niceScale).
func niceAxis(m float64) axis {
	top, step := niceScale(m)
	return axis{0, top, step}
}

// niceRange is an axis covering lo..hi that starts at a tick at or below
// lo: a distribution far from zero (a WAN's latency) gets the width.
func niceRange(lo, hi float64) axis {
	if !(hi > lo) || lo <= 0 {
		return niceAxis(hi)
	}
	_, step := niceScale(hi - lo)
	bottom := math.Floor(lo/step) * step
	top := math.Ceil(hi/step-1e-9) * step
	return axis{bottom, max(top, bottom+step), step}
}

func (a axis) frac(v float64) float64 { return clamp01((v - a.min) / (a.max - a.min)) }

// ticks are the axis's tick values, min and max included.
func (a axis) ticks() []float64 {
	var ts []float64
	for i := 0; ; i++ {
		v := a.min + float64(i)*a.step
		if v > a.max+a.step*1e-9 {
			return ts
		}
		ts = append(ts, v)
	}
}

// frame is a plot's drawing area in SVG units (y grows downwards) and
// the axes mapped onto it.
type frame struct {
	x, y, w, h float64
	xs, ys     axis
}

func (f frame) px(v float64) float64 { return f.x + f.w*f.xs.frac(v) }
func (f frame) py(v float64) float64 { return f.y + f.h - f.h*f.ys.frac(v) }

func clamp01(x float64) float64 { return min(1, max(0, x)) }

// axes draws the frame's grid and tick labels: y labels left of it, x
// labels under it.
func (c *canvas) axes(f frame) {
	c.yGrid(f)
	for _, v := range f.xs.ticks() {
		x := f.px(v)
		c.printf(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="0.5"/>`+"\n",
			n1(x), n1(f.y), n1(x), n1(f.y+f.h), c.pal.grid)
		c.text(x, f.y+f.h+13, 10, "", c.pal.muted, "middle", tickLabel(v, f.xs.step))
	}
}

// yGrid draws the frame and the y axis's grid lines and labels: the whole
// of the axes where the x axis has labels of its own (the size sweeps').
func (c *canvas) yGrid(f frame) {
	c.printf(`<rect class="plot-area" x="%s" y="%s" width="%s" height="%s" fill="none" stroke="%s" stroke-width="1"/>`+"\n",
		n1(f.x), n1(f.y), n1(f.w), n1(f.h), c.pal.grid)
	for _, v := range f.ys.ticks() {
		y := f.py(v)
		c.printf(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="0.5"/>`+"\n",
			n1(f.x), n1(y), n1(f.x+f.w), n1(y), c.pal.grid)
		c.text(f.x-4, y+3.5, 10, "", c.pal.muted, "end", tickLabel(v, f.ys.step))
	}
}

// polyline joins the points (xs[i], ys[i]) in order, with a dot on each
// point when there are few enough to tell apart.
func (c *canvas) polyline(f frame, xs, ys []float64, color string) {
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

// legendEntry draws a short line in the transport's colour and dash,
// then its label.
func (c *canvas) legendEntry(x, y float64, color, dash, label string) {
	c.printf(`<path class="swatch" d="M%s %sH%s" stroke="%s" stroke-width="3"%s/>`+"\n", n1(x), n1(y-4), n1(x+18), color, dashAttr(dash))
	c.text(x+24, y, 11, "", c.pal.text, "", label)
}

// Past the palette's colours, transports repeat a colour with another
// dash pattern and marker shape, so that lines on one panel stay apart.
var dashes = []string{"", "6 3", "2 2", "8 3 2 3"}

func (c *canvas) transportIndex(t string) int {
	for i, name := range c.v.order {
		if name == t {
			return i
		}
	}
	return 0
}

func (c *canvas) transportDash(t string) string {
	return dashes[(c.transportIndex(t)/len(c.pal.transports))%len(dashes)]
}

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return ` stroke-dasharray="` + dash + `"`
}

// marker draws a quantile point: a ring, then a square, a diamond and a
// triangle for the colour's later rounds.
func (c *canvas) marker(x, y float64, color string, round int) {
	const r = 3.5
	attrs := fmt.Sprintf(`class="quantile" fill="none" stroke="%s" stroke-width="1.5"`, color)
	switch round % 4 {
	case 0:
		c.printf(`<circle %s cx="%s" cy="%s" r="%s"/>`+"\n", attrs, n1(x), n1(y), n1(r))
	case 1:
		c.printf(`<rect %s x="%s" y="%s" width="%s" height="%s"/>`+"\n", attrs, n1(x-r), n1(y-r), n1(2*r), n1(2*r))
	case 2:
		c.printf(`<path %s d="M%s %sL%s %sL%s %sL%s %sZ"/>`+"\n", attrs, n1(x), n1(y-r-1), n1(x+r+1), n1(y), n1(x), n1(y+r+1), n1(x-r-1), n1(y))
	default:
		c.printf(`<path %s d="M%s %sL%s %sL%s %sZ"/>`+"\n", attrs, n1(x), n1(y-r-1), n1(x+r+1), n1(y+r), n1(x-r-1), n1(y+r))
	}
}

// figureNote writes a muted line of text; long lines are cut to the width.
func (c *canvas) figureNote(x, y, width float64, s string) {
	c.text(x, y, 11.5, "", c.pal.muted, "", truncate(s, width, 11.5))
}
