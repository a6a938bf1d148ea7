package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/report/svg"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// Latency CDF chart file names, beside the report.
const (
	LatencyCDFFile     = "bench-latency-cdf.svg"
	LatencyCDFDarkFile = "bench-latency-cdf-dark.svg"
)

// msPer converts a time unit to milliseconds; a unit not listed is not
// a time.
var msPer = map[string]float64{"s": 1000, "ms": 1, "us": 1e-3, "µs": 1e-3, "ns": 1e-6}

// cdfPanel is one latency distribution under one condition, every
// transport on it. Either curves (every latency probe a series holds) or
// quantile points (the percentiles a sample holds) are drawn: a tool that
// keeps only percentiles gets no curve between them.
type cdfPanel struct {
	condition, instrument string
	key                   string // the series key; "" for quantile points
	unit                  string // the axis unit
	probe                 string // rrul's probe (probeOf) when the panel holds one of two; ""
	lines                 []cdfLine
}

// cdfLine is one transport's data on a panel.
type cdfLine struct {
	transport string
	values    []float64    // sorted, for a curve
	censored  []float64    // sorted: waits of probes never answered, lower bounds (see kaplanMeier)
	quantiles [][2]float64 // (latency, fraction) points
	runs      int          // samples the data came from
}

// quantileKeys are the sample percentiles a CDF can be drawn from, with the
// fraction of transactions at or below each.
var quantileKeys = []struct {
	key      string
	fraction float64
}{{"p50_us", 0.50}, {"p99_us", 0.99}}

// cdfPanels finds, per condition: every series whose key starts with
// "latency" (after results.TCPRRFlow, rrul's TCP_RR flow beside ICMP) and
// whose unit is a time (probes, in ms), then every
// instrument whose samples carry p50 and p99 (TCP_RR's percentiles, in µs).
func (v *view) cdfPanels() []cdfPanel {
	var panels []cdfPanel
	for _, c := range v.doc.Conditions {
		for _, sec := range v.seriesKeys(c.Name) {
			if !strings.HasPrefix(strings.TrimPrefix(sec.key, results.TCPRRFlow), "latency") || strings.HasSuffix(sec.key, results.CensoredSeries("")) {
				continue
			}
			for _, probe := range v.probesOfKey(c.Name, sec.instrument, sec.key) {
				p := cdfPanel{condition: c.Name, instrument: sec.instrument, key: sec.key, unit: "ms", probe: probe}
				for _, t := range v.order {
					if l := v.probeLine(t, c.Name, sec, probe); len(l.values)+len(l.censored) > 0 {
						p.lines = append(p.lines, l)
					}
				}
				if len(p.lines) > 0 {
					panels = append(panels, p)
				}
			}
		}
		for _, in := range v.instrumentsIn(c.Name) {
			p := cdfPanel{condition: c.Name, instrument: in, unit: "µs"}
			for _, t := range v.order {
				l := cdfLine{transport: t}
				for _, s := range v.samples(t, c.Name, in) {
					held := false
					for _, q := range quantileKeys {
						if x, ok := s.Metric(q.key); ok {
							l.quantiles = append(l.quantiles, [2]float64{x, q.fraction})
							held = true
						}
					}
					if held {
						l.runs++
					}
				}
				if len(l.quantiles) > 0 {
					p.lines = append(p.lines, l)
				}
			}
			if len(p.lines) > 0 {
				panels = append(panels, p)
			}
		}
	}
	return panels
}

// seriesKeys are the condition's series, as the time series chart orders
// them.
func (v *view) seriesKeys(condition string) []seriesKey {
	var out []seriesKey
	for _, s := range v.timeSeriesSections() {
		if s.condition == condition {
			out = append(out, s.seriesKey)
		}
	}
	return out
}

// instrumentsIn are the instruments measured under condition, in the
// instruments' order.
func (v *view) instrumentsIn(condition string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range v.doc.Samples {
		if s.Condition == condition && !seen[s.Instrument] {
			seen[s.Instrument] = true
			out = append(out, s.Instrument)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return v.instrumentRank(out[i]) < v.instrumentRank(out[j]) })
	return out
}

// LatencyCDFChart draws the latency distributions of d (see cdfPanels),
// every transport on each panel. It returns nil when d holds none.
func LatencyCDFChart(d *results.Document, theme Theme) []byte {
	if d == nil {
		return nil
	}
	return latencyCDFChart(newView(d), theme, "")
}

// CDF layout, in SVG units.
const (
	cdfPanelH     = 290.0 // without its legend
	cdfLegendLine = svg.CDFLegendLine
)

// readable shows microseconds of 10 ms and more in milliseconds.
func (p cdfPanel) readable() cdfPanel {
	if p.unit != "µs" {
		return p
	}
	for _, l := range p.lines {
		for _, q := range l.quantiles {
			if q[0] < 10000 {
				return p
			}
		}
	}
	out := p
	out.unit, out.lines = "ms", nil
	for _, l := range p.lines {
		m := l
		m.quantiles = nil
		for _, q := range l.quantiles {
			m.quantiles = append(m.quantiles, [2]float64{q[0] / 1000, q[1]})
		}
		out.lines = append(out.lines, m)
	}
	return out
}

// cdfChart is the figure of latency distributions: a panel per
// instrument, metric and condition, a curve per transport.
type cdfChart struct{ canvas }

func latencyCDFChart(v *view, theme Theme, idPrefix string) []byte {
	panels := v.cdfPanels()
	if len(panels) == 0 {
		return nil
	}
	c := &cdfChart{newCanvas(v, theme, idPrefix)}
	rows := (len(panels) + panelCols - 1) / panelCols
	// Every panel leaves a legend line per transport of the report, so
	// that the panels of a row line up.
	ph := cdfPanelH + cdfLegendLine*float64(len(v.order))
	height := headerHeight + float64(rows)*(ph+panelGap) + footerHeight
	title := "Latency distributions — " + v.title()
	c.open(height, title, "Cumulative distributions of latency for "+title+": every transport on each panel.")
	pw := (chartWidth - 2*chartMargin - float64(panelCols-1)*panelGap) / panelCols
	for i, p := range panels {
		x := chartMargin + float64(i%panelCols)*(pw+panelGap)
		y := headerHeight + float64(i/panelCols)*(ph+panelGap)
		c.cdfPanel(i, p, x, y, pw, ph)
	}
	footer := "y: fraction of the latencies at or below x. Curves are empirical CDFs of measured probes; points are percentiles a tool reported."
	if slices.ContainsFunc(panels, cdfPanel.censored) {
		footer += " Ticks: censored waits; their curve, Kaplan–Meier's, stops below 1 when they are the longest."
	}
	c.Text(chartMargin, height-chartMargin/2-14, 12, "", c.Pal.Muted, "", footer)
	c.Printf("</svg>\n")
	return c.Bytes()
}

func (c *cdfChart) cdfPanel(i int, p cdfPanel, x, y, w, h float64) {
	what := p.instrument + ": " + p.key
	if p.probe != "" {
		what += " (probe: " + p.probe + ")"
	}
	from := []string{"empirical CDF of every probe of the cell's runs,", "pooled per transport"}
	if p.censored() {
		from = []string{"Kaplan–Meier estimate of every probe of the runs, pooled;",
			"|: an unanswered probe's wait, a lower bound (censored)"}
	}
	if p.key == "" {
		what = p.instrument + ": p50 and p99 of each run"
		from = []string{"points: each run's p50 and p99 as the tool reported them;", "it keeps no per-transaction latencies, so no curve"}
	}
	id := fmt.Sprintf("cdf-%d-%s", i, idSafe(p.instrument+"-"+p.key+"-"+joinNonEmpty("-", p.probe, p.condition)))
	panel := svg.CDFPanel{ID: id, Title: what + " — " + c.conditionLabel(p.condition), Notes: from,
		LegendRows: len(c.v.order), PlotLeft: tsPlotLeft}

	p = p.readable()
	xmin, xmax := math.Inf(1), 0.0
	for _, l := range p.lines {
		for _, x := range append(slices.Clone(l.values), l.censored...) {
			xmin, xmax = min(xmin, x), max(xmax, x)
		}
		for _, q := range l.quantiles {
			xmin, xmax = min(xmin, q[0]), max(xmax, q[0])
		}
	}
	panel.XS, panel.XLabel = svg.NiceRange(xmin, xmax), "latency ("+p.unit+")"
	for _, l := range p.lines {
		cv := svg.Curve{Key: l.transport, Color: c.transportColor(l.transport), Dash: c.transportDash(l.transport),
			End: math.Inf(-1), Quantiles: l.quantiles, Marker: c.transportIndex(l.transport) / len(c.Pal.Transports)}
		switch {
		case len(l.censored) > 0:
			cv.Steps, cv.End, cv.Censored = kaplanMeierCurve(l)
		case len(l.values) > 0:
			cv.Steps = cdfSteps(l.values)
		}
		label := c.v.label(l.transport) + " (" + plural(l.runs, "run", "runs")
		if n := len(l.values) + len(l.censored); n > 0 {
			label += ", " + plural(n, "probe", "probes")
		}
		if len(l.censored) > 0 {
			label += fmt.Sprintf(", %d censored", len(l.censored))
		}
		cv.Label = label + ")"
		panel.Curves = append(panel.Curves, cv)
	}
	panel.Draw(&c.Canvas, x, y, w, h)
}

// cdfSteps are the empirical CDF of sorted xs: it rises by 1/n at each
// value and is flat between them.
func cdfSteps(xs []float64) [][2]float64 {
	steps := make([][2]float64, len(xs))
	n := float64(len(xs))
	for i, x := range xs {
		steps[i] = [2]float64{x, float64(i+1) / n}
	}
	return steps
}
