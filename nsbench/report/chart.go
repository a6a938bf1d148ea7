package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/report/svg"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// Chart file names, beside the report in the output directory.
const (
	ChartFile     = "bench-chart.svg"
	ChartDarkFile = "bench-chart-dark.svg"
)

// Theme is a chart's colour scheme (svg's).
type Theme = svg.Theme

const (
	Light = svg.Light // dark text on white: bench-chart.svg
	Dark  = svg.Dark  // light text on GitHub's dark background: bench-chart-dark.svg
)

// Layout, in SVG user units (px).
const (
	chartWidth   = svg.Width
	chartMargin  = svg.Margin
	panelGap     = 20.0
	panelCols    = 2
	panelPad     = svg.PanelPad
	headerHeight = 70.0
	footerHeight = 46.0
)

// Chart draws d's key results as an SVG image: small panels of horizontal
// bars, one bar per transport, each labelled with its median and with an
// error bar from the spread source (spreadFor). A panel without data says
// so instead of drawing zeros. Like Markdown, it is deterministic.
func Chart(d *results.Document, theme Theme) []byte {
	if d == nil {
		return nil
	}
	return keyChart(newView(d), theme, "")
}

func keyChart(v *view, theme Theme, idPrefix string) []byte {
	c := newChart(v, theme, idPrefix)
	c.panels, c.title, c.cpuNote = panelsFor(v), v.title(), true
	return c.render()
}

// chart is one figure of bar charts being drawn (render): a panel per
// condition and metric, a bar per transport.
type chart struct {
	canvas
	panels []chartPanel
	title  string
	// cpuNote adds the footer line on stacked CPU bars.
	cpuNote bool
	src     spreadSource
	// levels collects the confidence level of every whisker drawn from
	// an interval (0 for a min–max whisker), for the footer.
	levels []float64
}

func newChart(v *view, theme Theme, idPrefix string) *chart {
	return &chart{canvas: newCanvas(v, theme, idPrefix), src: spreadFor(v.doc)}
}

func (c *chart) render() []byte {
	// Every bar first: the header's description and the footer say what
	// the whiskers drawn are.
	bars := make([][]bar, len(c.panels))
	for i, p := range c.panels {
		bars[i] = c.bars(p)
	}
	rows := (len(c.panels) + panelCols - 1) / panelCols
	ph := svg.BarPanelHeight(max(1, len(c.v.order)))
	height := headerHeight + float64(rows)*(ph+panelGap) - panelGap + footerHeight + chartMargin/2
	pw := (chartWidth - 2*chartMargin - float64(panelCols-1)*panelGap) / panelCols

	c.open(height, c.title, c.description())
	for i, p := range c.panels {
		x := chartMargin + float64(i%panelCols)*(pw+panelGap)
		y := headerHeight + float64(i/panelCols)*(ph+panelGap)
		c.panel(p, bars[i], x, y, pw, ph)
	}
	if c.cpuNote {
		c.Text(chartMargin, height-chartMargin/2-22, 12, "", c.Pal.Muted, "", "Bars: median of the runs; "+c.footerCaption()+c.boundsCaption(bars))
		c.Text(chartMargin, height-chartMargin/2-6, 12, "", c.Pal.Muted, "", "CPU bars stack the per-role medians; their whiskers span the runs' totals.")
	} else {
		c.Text(chartMargin, height-chartMargin/2-14, 12, "", c.Pal.Muted, "", "Bars: median of the runs; "+c.footerCaption()+c.boundsCaption(bars))
	}
	c.Printf("</svg>\n")
	return c.Bytes()
}

func (c *chart) description() string {
	return "Bar charts of " + c.title + ": one bar per transport and panel; " + c.footerCaption()
}

// footerCaption says what the whiskers of this chart are, from the levels
// actually drawn: the cells' intervals, and the min–max whiskers (level 0)
// of bars without a cell, named apart and never as a level.
func (c *chart) footerCaption() string {
	var levels []float64
	for _, l := range c.levels {
		if l > 0 {
			levels = append(levels, l)
		}
	}
	if len(levels) == 0 {
		return "whiskers: min–max of the runs."
	}
	lo, hi := slices.Min(levels), slices.Max(levels)
	s := fmt.Sprintf("whiskers: confidence intervals of the median, %s–%s %%", pct(lo), pct(hi))
	if lo == hi {
		s = fmt.Sprintf("whiskers: %s %% confidence interval of the median", pct(lo))
	}
	switch {
	case lo < 0.95 && lo == hi:
		s += " (too few runs for 95 %: the min–max range)"
	case lo < 0.95:
		s += " (below 95 % with too few runs: the min–max range)"
	}
	if ranges := len(c.levels) - len(levels); ranges > 0 {
		s += fmt.Sprintf("; min–max of the runs for %s without one", plural(ranges, "bar", "bars"))
	}
	return s + "."
}

// pct renders a level as a percentage with at most one decimal.
func pct(level float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(100*level, 'f', 1, 64), ".0")
}

// bar is one transport's drawing in a panel.
type bar struct {
	transport string
	spread    spread
	segments  []float64 // stacked panels: per-role medians
	note      string    // set instead of a bar: "no data", "skipped"
}

func (c *chart) bars(p chartPanel) []bar {
	bars := make([]bar, 0, len(c.v.order))
	for _, t := range c.v.order {
		ss := c.v.samples(t, p.condition, p.instrument)
		b := bar{transport: t}
		if note := c.v.noFigureNote(t, p.metric); note != "" {
			b.note = note
			bars = append(bars, b)
			continue
		}
		switch {
		case p.stacked:
			b.segments, b.spread = c.cpuBar(t, p, ss)
		default:
			if rs := c.v.readings(ss, p.metric, p.probe); len(rs) > 0 {
				b.spread = c.src.spread(metricKey{t, p.condition, p.instrument, p.metric}, rs)
				switch base, ok := c.plainSpread(p); {
				case p.relative && ok:
					b.spread = relativeSpread(b.spread, base)
				case b.spread.n > 1:
					c.levels = append(c.levels, b.spread.level)
				}
			}
		}
		if b.spread.n == 0 {
			b.note = "no data"
			if _, skipped := c.v.skipReason(t, p.condition); skipped {
				b.note = "skipped"
			}
		}
		bars = append(bars, b)
	}
	return bars
}

// plainSpread is the plain row's bar in panel p, the base of a relative
// panel; false without a plain row or its median.
func (c *chart) plainSpread(p chartPanel) (spread, bool) {
	plain := c.v.plainRow()
	if plain == "" {
		return spread{}, false
	}
	rs := c.v.readings(c.v.samples(plain, p.condition, p.instrument), p.metric, p.probe)
	if len(rs) == 0 {
		return spread{}, false
	}
	s := c.src.spread(metricKey{plain, p.condition, p.instrument, p.metric}, rs)
	return s, s.center > 0 && s.lo > 0
}

// relativeSpread is s divided by the plain row's base: the centre by its
// median, the whisker by both rows' whiskers (s's low end over the base's
// high end, s's high end over its low end), for the plain median is a
// measurement too and its spread is the ratio's as much as the row's.
// The whisker is no longer one median's interval at one level: its level
// is not drawn into the footer, and the panel's unit line says what it is.
func relativeSpread(s, base spread) spread {
	s.center, s.lo, s.hi = s.center/base.center, s.lo/base.hi, s.hi/base.lo
	s.level = 0
	return s
}

// cpuBar stacks the per-role medians of the scp samples' cgroup CPU-s, as
// the report's CPU column shows them; the whisker spans the runs' totals.
func (c *chart) cpuBar(t string, p chartPanel, ss []results.Sample) ([]float64, spread) {
	segs := make([]float64, len(cpuRoles))
	measured := false
	for i, role := range cpuRoles {
		xs := roleCPU(ss, role)
		if sum := stats.Summarize(xs); sum.N > 0 {
			segs[i], measured = sum.Median, true
		}
	}
	if !measured {
		return nil, spread{}
	}
	var totals []float64
	for _, s := range ss {
		total, ok := 0.0, false
		for _, role := range cpuRoles {
			if sec, has := s.RoleCPUSec[role]; has {
				total, ok = total+sec, true
			}
		}
		if ok {
			totals = append(totals, total)
		}
	}
	center := 0.0
	for _, s := range segs {
		center += s
	}
	sum := stats.Summarize(totals)
	return segs, spread{center: center, lo: sum.Min, hi: sum.Max, n: sum.N}
}

// metricValues are the samples' values of one metric, as results.Cells
// collects them.
func metricValues(ss []results.Sample, metric string) []float64 {
	var xs []float64
	for _, s := range ss {
		if v, ok := s.Metric(metric); ok {
			xs = append(xs, v)
		}
	}
	return xs
}

// panel draws panel p's bars in the box at (x, y) of w × h.
func (c *chart) panel(p chartPanel, bars []bar, x, y, w, h float64) {
	sp := svg.BarPanel{ID: p.id, Title: p.title + " — " + c.conditionLabel(p.condition), Unit: p.unit}
	if p.stacked {
		for i, role := range cpuRoles {
			sp.Legend = append(sp.Legend, svg.Swatch{Name: role, Color: c.Pal.Roles[i]})
		}
	}
	for _, b := range bars {
		r := svg.BarRow{Key: b.transport, Label: c.v.label(b.transport), Note: b.note, Color: c.transportColor(b.transport),
			Bar: svg.Extent{Center: b.spread.center, Lo: b.spread.lo, Hi: b.spread.hi, Whisker: b.spread.n > 1 && b.spread.hi > b.spread.lo}}
		if b.note == "" {
			r.Title, r.Value = c.barTitle(p, b), c.valueLabel(p, b)
		}
		if p.stacked && b.note == "" {
			for i, sec := range b.segments {
				r.Segments = append(r.Segments, svg.Segment{Swatch: sp.Legend[i], Value: sec})
			}
		}
		sp.Rows = append(sp.Rows, r)
	}
	sp.Draw(&c.Canvas, x, y, w, h)
}

func (c *chart) valueLabel(p chartPanel, b bar) string {
	if b.note != "" {
		return ""
	}
	s := atLeastMark(b.spread.atLeast) + num(b.spread.center, p.prec)
	if runs := c.v.doc.PlannedRuns(b.transport, p.condition, p.instrument); b.spread.n < runs {
		s += fmt.Sprintf(" (n=%d)", b.spread.n)
	}
	return s
}

// barTitle is the bar's tooltip: the label, the median and the whisker's
// meaning in numbers.
func (c *chart) barTitle(p chartPanel, b bar) string {
	s := fmt.Sprintf("%s: %s%s", c.v.label(b.transport), atLeastMark(b.spread.atLeast), num(b.spread.center, p.prec))
	if p.stacked {
		parts := make([]string, len(cpuRoles))
		for i, r := range cpuRoles {
			parts[i] = r + " " + num(b.segments[i], p.prec)
		}
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if b.spread.n > 1 {
		what := "min–max"
		if b.spread.level > 0 {
			what = pct(b.spread.level) + " % CI"
		}
		s += fmt.Sprintf("; %s %s–%s%s; n=%d", what, num(b.spread.lo, p.prec), atLeastMark(b.spread.hiAtLeast), num(b.spread.hi, p.prec), b.spread.n)
	}
	return s
}
