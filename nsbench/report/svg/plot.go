package svg

import (
	"fmt"
	"math"
	"strings"
)

// plot.go draws line and point plots on a canvas: a frame with
// linear axes that start at zero, grid lines and tick labels. The time
// series and the latency CDF are drawn with it.

// Axis is one linear axis from min to max with a tick every step.
type Axis struct{ Min, Max, Step float64 }

// NiceAxis is an axis from 0 reaching at least m (see niceScale).
func NiceAxis(m float64) Axis {
	top, step := niceScale(m)
	return Axis{0, top, step}
}

// NiceRange is an axis covering lo..hi that starts at a tick at or below
// lo: a distribution far from zero (a WAN's latency) gets the width.
func NiceRange(lo, hi float64) Axis {
	if !(hi > lo) || lo <= 0 {
		return NiceAxis(hi)
	}
	_, step := niceScale(hi - lo)
	bottom := math.Floor(lo/step) * step
	top := math.Ceil(hi/step-1e-9) * step
	return Axis{bottom, max(top, bottom+step), step}
}

func (a Axis) Frac(v float64) float64 { return clamp01((v - a.Min) / (a.Max - a.Min)) }

// Ticks are the axis's tick values, min and max included.
func (a Axis) Ticks() []float64 {
	var ts []float64
	for i := 0; ; i++ {
		v := a.Min + float64(i)*a.Step
		if v > a.Max+a.Step*1e-9 {
			return ts
		}
		ts = append(ts, v)
	}
}

// Frame is a plot's drawing area in SVG units (y grows downwards) and
// the axes mapped onto it.
type Frame struct {
	X, Y, W, H float64
	XS, YS     Axis
}

func (f Frame) Px(v float64) float64 { return f.X + f.W*f.XS.Frac(v) }
func (f Frame) Py(v float64) float64 { return f.Y + f.H - f.H*f.YS.Frac(v) }

func clamp01(x float64) float64 { return min(1, max(0, x)) }

// Axes draws the frame's grid and tick labels: y labels left of it, x
// labels under it.
func (c *Canvas) Axes(f Frame) {
	c.yGrid(f)
	for _, v := range f.XS.Ticks() {
		x := f.Px(v)
		c.Printf(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="0.5"/>`+"\n",
			N1(x), N1(f.Y), N1(x), N1(f.Y+f.H), c.Pal.Grid)
		c.Text(x, f.Y+f.H+13, 10, "", c.Pal.Muted, "middle", tickLabel(v, f.XS.Step))
	}
}

// yGrid draws the frame and the y axis's grid lines and labels: the whole
// of the axes where the x axis has labels of its own (the size sweeps').
func (c *Canvas) yGrid(f Frame) {
	c.Printf(`<rect class="plot-area" x="%s" y="%s" width="%s" height="%s" fill="none" stroke="%s" stroke-width="1"/>`+"\n",
		N1(f.X), N1(f.Y), N1(f.W), N1(f.H), c.Pal.Grid)
	for _, v := range f.YS.Ticks() {
		y := f.Py(v)
		c.Printf(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="0.5"/>`+"\n",
			N1(f.X), N1(y), N1(f.X+f.W), N1(y), c.Pal.Grid)
		c.Text(f.X-4, y+3.5, 10, "", c.Pal.Muted, "end", tickLabel(v, f.YS.Step))
	}
}

// Polyline joins the points (xs[i], ys[i]) in order, with a dot on each
// point when there are few enough to tell apart.
func (c *Canvas) Polyline(f Frame, xs, ys []float64, color string) {
	var pts []string
	for i := range xs {
		pts = append(pts, N1(f.Px(xs[i]))+","+N1(f.Py(ys[i])))
	}
	c.Printf(`<polyline class="series" points="%s" fill="none" stroke="%s" stroke-width="1.5" stroke-linejoin="round"/>`+"\n",
		strings.Join(pts, " "), color)
	if len(xs) > 60 {
		return
	}
	for i := range xs {
		c.Printf(`<circle class="point" cx="%s" cy="%s" r="2.2" fill="%s"/>`+"\n", N1(f.Px(xs[i])), N1(f.Py(ys[i])), color)
	}
}

// LegendEntry draws a short line in the transport's colour and dash,
// then its label.
func (c *Canvas) LegendEntry(x, y float64, color, dash, label string) {
	c.Printf(`<path class="swatch" d="M%s %sH%s" stroke="%s" stroke-width="3"%s/>`+"\n", N1(x), N1(y-4), N1(x+18), color, dashAttr(dash))
	c.Text(x+24, y, 11, "", c.Pal.Text, "", label)
}

// Dashes are the dash patterns a colour repeats with past the palette's
// colours (with another marker shape), so that lines on one panel stay
// apart.
var Dashes = []string{"", "6 3", "2 2", "8 3 2 3"}

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return ` stroke-dasharray="` + dash + `"`
}

// marker draws a quantile point: a ring, then a square, a diamond and a
// triangle for the colour's later rounds.
func (c *Canvas) marker(x, y float64, color string, round int) {
	const r = 3.5
	attrs := fmt.Sprintf(`class="quantile" fill="none" stroke="%s" stroke-width="1.5"`, color)
	switch round % 4 {
	case 0:
		c.Printf(`<circle %s cx="%s" cy="%s" r="%s"/>`+"\n", attrs, N1(x), N1(y), N1(r))
	case 1:
		c.Printf(`<rect %s x="%s" y="%s" width="%s" height="%s"/>`+"\n", attrs, N1(x-r), N1(y-r), N1(2*r), N1(2*r))
	case 2:
		c.Printf(`<path %s d="M%s %sL%s %sL%s %sL%s %sZ"/>`+"\n", attrs, N1(x), N1(y-r-1), N1(x+r+1), N1(y), N1(x), N1(y+r+1), N1(x-r-1), N1(y))
	default:
		c.Printf(`<path %s d="M%s %sL%s %sL%s %sZ"/>`+"\n", attrs, N1(x), N1(y-r-1), N1(x+r+1), N1(y+r), N1(x-r-1), N1(y+r))
	}
}

// FigureNote writes a muted line of text; long lines are cut to the width.
func (c *Canvas) FigureNote(x, y, width float64, s string) {
	c.Text(x, y, 11.5, "", c.Pal.Muted, "", Truncate(s, width, 11.5))
}

// stepCurve draws a step function in dash: from (steps[0]'s x, 0) it rises
// to each step's y at its x and is flat between, then runs on flat to end
// when end lies beyond the last step.
func (c *Canvas) stepCurve(f Frame, steps [][2]float64, end float64, color, dash string) {
	var b strings.Builder
	fmt.Fprintf(&b, "M%s %s", N1(f.Px(steps[0][0])), N1(f.Py(0)))
	for i, s := range steps {
		if i > 0 {
			fmt.Fprintf(&b, "H%s", N1(f.Px(s[0])))
		}
		fmt.Fprintf(&b, "V%s", N1(f.Py(s[1])))
	}
	if end > steps[len(steps)-1][0] {
		fmt.Fprintf(&b, "H%s", N1(f.Px(end)))
	}
	c.Printf(`<path class="cdf" d="%s" fill="none" stroke="%s" stroke-width="1.5"%s/>`+"\n", b.String(), color, dashAttr(dash))
}

// censoredTick marks a value known only as a lower bound at (x, y): a
// short vertical tick.
func (c *Canvas) censoredTick(f Frame, x, y float64, color string) {
	px, py := f.Px(x), f.Py(y)
	c.Printf(`<path class="censored" d="M%s %sV%s" stroke="%s" stroke-width="1.5"/>`+"\n", N1(px), N1(py-5), N1(py+5), color)
}

// LinePanel is a framed panel of one line: a title, a note under it and
// the line (T[i], V[i]) on the axes XS and YS.
type LinePanel struct {
	Key         string // its data-transport attribute
	Title, Note string
	Color       string
	T, V        []float64
	XS, YS      Axis
	PlotLeft    float64 // room left of the plot for the y tick labels
}

// Draw draws p on c in the box at (x, y) of w × h.
func (p LinePanel) Draw(c *Canvas, x, y, w, h float64) {
	c.Printf(`<g class="panel ts-panel" data-transport="%s">`+"\n", Esc(p.Key))
	c.Printf(`<rect x="%s" y="%s" width="%s" height="%s" rx="6" fill="%s" stroke="%s"/>`+"\n",
		N1(x), N1(y), N1(w), N1(h), c.Pal.Panel, c.Pal.Border)
	c.Text(x+10, y+18, 12.5, "bold", c.Pal.Text, "", Truncate(p.Title, w-20, 12.5))
	c.FigureNote(x+10, y+33, w-20, p.Note)
	f := Frame{X: x + p.PlotLeft, Y: y + 44, W: w - p.PlotLeft - 12, H: h - 44 - 24, XS: p.XS, YS: p.YS}
	c.Axes(f)
	c.Polyline(f, p.T, p.V, p.Color)
	c.Printf("</g>\n")
}
