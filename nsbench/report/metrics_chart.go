package report

import (
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// Metrics chart file names, beside the report.
const (
	MetricsChartFile     = "bench-metrics.svg"
	MetricsChartDarkFile = "bench-metrics-dark.svg"
)

// MetricsChart draws every metric the document holds — each declared
// metric of each instrument, or, for a document without declarations (the
// reference harness's), what results.MetricValues reads it with — as a
// panel per condition: one bar per transport, its median with the whisker
// of the headline chart (the cell's interval, or min–max). It returns nil
// when the document holds no value at all.
func MetricsChart(d *results.Document, theme Theme) []byte {
	if d == nil {
		return nil
	}
	return metricsChart(newView(d), theme, "")
}

func metricsChart(v *view, theme Theme, idPrefix string) []byte {
	panels := declaredPanels(v)
	if len(panels) == 0 {
		return nil
	}
	c := newChart(v, theme, idPrefix)
	c.panels, c.title = panels, "Every metric — "+v.title()
	return c.render()
}

// declaredPanels is one panel per condition and metric with at least one
// value, in the conditions' order, then the instruments' declaration order
// (first appearance in the samples for undeclared ones), then the metrics'.
func declaredPanels(v *view) []chartPanel {
	order, values := v.doc.MetricValues()
	type im struct{ instrument, metric string }
	var metrics []im
	seen := map[im]bool{}
	add := func(x im) {
		if !seen[x] {
			seen[x] = true
			metrics = append(metrics, x)
		}
	}
	for _, in := range v.doc.Instruments {
		for _, m := range in.Metrics {
			add(im{in.Name, m.Key})
		}
	}
	for _, k := range order {
		add(im{k.Instrument, k.Metric})
	}
	var panels []chartPanel
	for _, c := range v.doc.Conditions {
		for _, x := range metrics {
			var all []float64
			for _, k := range order {
				if k.Condition == c.Name && k.Instrument == x.instrument && k.Metric == x.metric {
					all = append(all, values[k]...)
				}
			}
			if len(all) == 0 {
				continue
			}
			title, unit := v.metricTitle(x.instrument, x.metric)
			probes := []string{""}
			if m, _ := v.doc.MetricOf(x.instrument, x.metric); msPer[m.Unit] > 0 {
				probes = v.probesOfKey(c.Name, x.instrument, x.metric)
			}
			for _, probe := range probes {
				p := chartPanel{
					id:        idSafe(c.Name + "-" + x.instrument + "-" + x.metric),
					condition: c.Name, instrument: x.instrument, metric: x.metric,
					title: title, unit: unit, prec: autoPrec(all), probe: probe,
				}
				if probe != "" {
					p.id, p.title = idSafe(p.id+"-"+probe), title+" (probe: "+probe+")"
				}
				panels = append(panels, p)
			}
		}
	}
	return panels
}

// metricTitle names a metric for a panel: the instrument and the declared
// label, and the unit line with the declared direction. An undeclared
// metric is named by its key, with the samples' own unit for "value".
func (v *view) metricTitle(instrument, key string) (title, unit string) {
	m, declared := v.doc.MetricOf(instrument, key)
	label := m.Label
	if label == "" {
		label = key
	}
	unit = m.Unit
	if !declared && key == "value" {
		for _, s := range v.doc.Samples {
			if s.Instrument == instrument && s.Unit != "" {
				unit = s.Unit
				break
			}
		}
	}
	if !declared && strings.HasSuffix(key, "_us") {
		unit = "µs"
	}
	switch m.Better {
	case results.BetterHigher:
		unit = joinNonEmpty(" · ", unit, "higher is better")
	case results.BetterLower:
		unit = joinNonEmpty(" · ", unit, "lower is better")
	}
	if unit == "" {
		unit = "no unit declared"
	}
	return instrument + ": " + label, unit
}

func joinNonEmpty(sep string, parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, sep)
}

// idSafe keeps an element id to letters, digits, '-' and '_'.
func idSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '-'
	}, s)
}
