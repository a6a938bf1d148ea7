package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/report/svg"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// Time series chart file names, beside the report.
const (
	TimeSeriesFile     = "bench-timeseries.svg"
	TimeSeriesDarkFile = "bench-timeseries-dark.svg"
)

// seriesKey names the series drawn together: one key of one instrument
// under one condition.
type seriesKey struct{ condition, instrument, key string }

// tsSection is one row of panels: a series key, one panel per transport
// that recorded it, on shared axes.
type tsSection struct {
	seriesKey
	unit    string
	runs    []tsRun
	missing []string // transports measured in the cell without this series
}

// tsRun is the run drawn for one transport: the median's run among the
// cell's samples that carry the series.
type tsRun struct {
	transport string
	sample    results.Sample
	series    results.Series
	of        int // samples of the cell carrying the series
}

// timeSeriesSections finds every series in d, in the conditions' order,
// then the instruments' first appearance, then the keys'.
func (v *view) timeSeriesSections() []tsSection {
	var keys []seriesKey
	seen := map[seriesKey]bool{}
	for _, c := range v.doc.Conditions {
		var cond []seriesKey
		for _, s := range v.doc.Samples {
			if s.Condition != c.Name {
				continue
			}
			for _, se := range s.Series {
				k := seriesKey{s.Condition, s.Instrument, se.Key}
				if !seen[k] && len(points(se)) > 0 && !strings.HasSuffix(se.Key, results.CensoredSeries("")) { // noted on their readings' row (runNote)
					seen[k] = true
					cond = append(cond, k)
				}
			}
		}
		sort.SliceStable(cond, func(i, j int) bool {
			return v.instrumentRank(cond[i].instrument) < v.instrumentRank(cond[j].instrument)
		})
		keys = append(keys, cond...)
	}
	var sections []tsSection
	for _, k := range keys {
		sec := tsSection{seriesKey: k}
		for _, t := range v.order {
			ss := v.samples(t, k.condition, k.instrument)
			r, ok := medianRun(ss, k.key)
			switch {
			case ok:
				sec.runs = append(sec.runs, r)
				if sec.unit == "" {
					sec.unit = r.series.Unit
				}
			case len(ss) > 0:
				sec.missing = append(sec.missing, v.label(t))
			}
		}
		sections = append(sections, sec)
	}
	return sections
}

// instrumentRank orders instruments as declared, undeclared ones after.
func (v *view) instrumentRank(name string) int {
	for i, in := range v.doc.Instruments {
		if in.Name == name {
			return i
		}
	}
	return len(v.doc.Instruments)
}

// medianRun picks, among the samples carrying series key, the run whose
// value is the median (the lower one of an even count; the earlier run
// on a tie), so the drawing shows a typical run rather than the best. A
// series of rrul's TCP_RR flow beside ICMP goes by that flow's value.
func medianRun(ss []results.Sample, key string) (tsRun, bool) {
	type cand struct {
		s  results.Sample
		se results.Series
	}
	var cs []cand
	for _, s := range ss {
		for _, se := range s.Series {
			if se.Key == key && len(points(se)) > 0 {
				cs = append(cs, cand{s, se})
				break
			}
		}
	}
	if len(cs) == 0 {
		return tsRun{}, false
	}
	value := func(s results.Sample) float64 { // the series' flow's value (rrul's TCP_RR beside ICMP has its own)
		if s.Instrument == instRRUL && strings.HasPrefix(key, results.TCPRRFlow) {
			return s.Extra[results.TCPRRFlow+"value"]
		}
		return s.Value
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if vi, vj := value(cs[i].s), value(cs[j].s); vi != vj {
			return vi < vj
		}
		return cs[i].s.Run < cs[j].s.Run
	})
	m := cs[(len(cs)-1)/2]
	return tsRun{transport: m.s.Transport, sample: m.s, series: m.se, of: len(cs)}, true
}

// points are a series' finite (t, v) pairs, as many as both slices hold.
func points(se results.Series) [][2]float64 {
	n := min(len(se.T), len(se.V))
	var ps [][2]float64
	for i := 0; i < n; i++ {
		t, x := se.T[i], se.V[i]
		if math.IsNaN(t) || math.IsInf(t, 0) || math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		ps = append(ps, [2]float64{t, x})
	}
	return ps
}

// TimeSeriesChart draws every series the samples carry: per condition,
// instrument and key, one panel per transport with the median's run, on
// axes shared across the row. It returns nil when no sample carries a
// series: the report then says so instead of drawing empty frames.
func TimeSeriesChart(d *results.Document, theme Theme) []byte {
	if d == nil {
		return nil
	}
	return timeSeriesChart(newView(d), theme, "")
}

// Time series layout, in SVG units.
const (
	tsHead     = 40.0  // a section's heading and note
	tsPanelH   = 190.0 // one transport's panel
	tsCols     = 3
	tsPlotLeft = 44.0 // room for the y tick labels
)

// tsChart is the figure of time series: a section per series, a panel
// per transport (the median's run).
type tsChart struct{ canvas }

func timeSeriesChart(v *view, theme Theme, idPrefix string) []byte {
	sections := v.timeSeriesSections()
	if len(sections) == 0 {
		return nil
	}
	c := &tsChart{newCanvas(v, theme, idPrefix)}
	height := headerHeight
	for _, s := range sections {
		rows := (len(s.runs) + tsCols - 1) / tsCols
		height += tsHead + float64(rows)*(tsPanelH+panelGap)
	}
	height += footerHeight
	title := "Time series — " + v.title()
	c.open(height, title, "Line plots of "+title+": one panel per transport for each series, the median's run of each cell.")
	y := headerHeight
	for i, s := range sections {
		y = c.tsSection(i, s, y)
	}
	c.Text(chartMargin, height-chartMargin/2-14, 12, "", c.Pal.Muted, "",
		"Each panel is one run: the run whose value is the median of the cell's runs that recorded the series.")
	c.Printf("</svg>\n")
	return c.Bytes()
}

// tsSection draws one section from y and returns where the next begins.
func (c *tsChart) tsSection(i int, s tsSection, y float64) float64 {
	c.Printf(`<g class="ts-section" id="%sts-%d-%s">`+"\n", c.IDPrefix, i, idSafe(s.instrument+"-"+s.key+"-"+s.condition))
	unit := s.unit
	if unit == "" {
		unit = "no unit recorded"
	}
	c.Text(chartMargin, y+18, 14, "bold", c.Pal.Text, "",
		fmt.Sprintf("%s: %s (%s) — %s", s.instrument, s.key, unit, c.conditionLabel(s.condition)))
	note := "x: seconds from the start of the run; y from 0, the same scale in every panel of the row."
	if len(s.missing) > 0 {
		note += " No such series from " + joinAnd(s.missing) + "."
	}
	c.FigureNote(chartMargin, y+34, chartWidth-2*chartMargin, note)
	y += tsHead

	var tmax, vmax float64
	for _, r := range s.runs {
		for _, p := range points(r.series) {
			tmax, vmax = max(tmax, p[0]), max(vmax, p[1])
		}
	}
	xs, ys := svg.NiceAxis(tmax), svg.NiceAxis(vmax)
	cols := min(tsCols, len(s.runs))
	pw := (chartWidth - 2*chartMargin - float64(cols-1)*panelGap) / float64(cols)
	for j, r := range s.runs {
		px := chartMargin + float64(j%cols)*(pw+panelGap)
		py := y + float64(j/cols)*(tsPanelH+panelGap)
		var ts, vs []float64
		for _, p := range points(r.series) {
			ts, vs = append(ts, p[0]), append(vs, p[1])
		}
		panel := svg.LinePanel{Key: r.transport, Title: c.v.label(r.transport), Note: c.runNote(r), Color: c.transportColor(r.transport),
			T: ts, V: vs, XS: xs, YS: ys, PlotLeft: tsPlotLeft}
		panel.Draw(&c.Canvas, px, py, pw, tsPanelH)
	}
	c.Printf("</g>\n")
	rows := (len(s.runs) + cols - 1) / cols
	return y + float64(rows)*(tsPanelH+panelGap)
}

// runNote says which run a panel shows and why.
func (c *tsChart) runNote(r tsRun) string {
	n := len(points(r.series))
	censored := ""
	for _, se := range r.sample.Series {
		if k := len(points(se)); se.Key == results.CensoredSeries(r.series.Key) && k > 0 {
			censored = fmt.Sprintf(" · %d unanswered (censored), not drawn", k)
		}
	}
	if r.of == 1 {
		return fmt.Sprintf("run %d (the only one) · %d points", r.sample.Run, n) + censored
	}
	return fmt.Sprintf("run %d (median of %d) · %d points", r.sample.Run, r.of, n) + censored
}
