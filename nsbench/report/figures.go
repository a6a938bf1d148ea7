package report

import (
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/report/textfmt"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// HTMLFile is the one-page report's name, beside the Markdown.
const HTMLFile = "bench-report.html"

// figure is one chart of the report: its files, its heading, how it is
// drawn, and what the report says when the document has nothing to draw.
type figure struct {
	id             string // the HTML section's id
	file, darkFile string
	title          string
	absent         string // the sentence shown instead; "" when always drawn
	// optional figures are left out of the report, sentence and all,
	// when the document has nothing for them (those of instruments the
	// default run does not measure).
	optional bool
	has      func(v *view) bool
	draw     func(v *view, theme Theme, idPrefix string) []byte
}

// figures are the report's charts in reading order.
var figures = []figure{
	{id: "chart-key-results", file: ChartFile, darkFile: ChartDarkFile, title: "Key results",
		absent: "No key-results chart: none of its instruments (iperf3, scp, TCP_RR) ran.",
		has:    func(v *view) bool { return len(panelsFor(v)) > 0 }, draw: keyChart},
	{id: "chart-every-metric", file: MetricsChartFile, darkFile: MetricsChartDarkFile, title: "Every metric",
		absent: "No metric chart: the document holds no measured value.",
		has:    func(v *view) bool { return len(declaredPanels(v)) > 0 }, draw: metricsChart},
	{id: "chart-time-series", file: TimeSeriesFile, darkFile: TimeSeriesDarkFile, title: "Time series",
		absent: "No time series: no sample of this document carries one (an instrument records them where its tool reports " +
			"per-interval values or latency probes).",
		has: func(v *view) bool { return len(v.timeSeriesSections()) > 0 }, draw: timeSeriesChart},
	{id: "chart-latency-cdf", file: LatencyCDFFile, darkFile: LatencyCDFDarkFile, title: "Latency distributions",
		absent: "No latency distribution: no sample carries latency probes or latency percentiles.",
		has:    func(v *view) bool { return len(v.cdfPanels()) > 0 }, draw: latencyCDFChart},
	{id: "chart-size-sweeps", file: SweepsFile, darkFile: SweepsDarkFile, title: "Size sweeps", optional: true,
		has: func(v *view) bool { return len(allSweepCurves(v)) > 0 }, draw: sweepsChart},
	{id: "chart-profile", file: ProfileFile, darkFile: ProfileDarkFile, title: "Where the time went (B against A)", optional: true,
		has: func(v *view) bool { return hasFlame(v) }, draw: profileChart},
}

// File is one file of the report (textfmt.File, which the CI formats
// return too).
type File = textfmt.File

// Files renders every file of the report but the Markdown: each chart in
// both themes and the HTML page.
func Files(d *results.Document) []File {
	if d == nil {
		return nil
	}
	v := newView(d)
	var out []File
	for _, f := range figures {
		var light, dark []byte
		if f.has(v) {
			light, dark = f.draw(v, Light, ""), f.draw(v, Dark, "")
		}
		out = append(out, File{Name: f.file, Body: light}, File{Name: f.darkFile, Body: dark})
	}
	return append(out, File{Name: HTMLFile, Body: HTML(d)})
}

// figureLinks is the Markdown's pointer to the charts beyond the key
// results and to the HTML page, with the sentence of each chart the
// document has nothing for.
func (v *view) figureLinks() string {
	var links, absent []string
	if !figures[0].has(v) {
		absent = append(absent, figures[0].absent)
	}
	for _, f := range figures[1:] {
		if f.has(v) {
			links = append(links, "["+strings.ToLower(f.title)+"]("+f.file+")")
		} else if !f.optional {
			absent = append(absent, f.absent)
		}
	}
	s := ""
	if len(links) > 0 {
		s = "More charts: " + joinAnd(links) + " (each with a -dark variant). "
	}
	s += "Every table and chart on one page: [" + HTMLFile + "](" + HTMLFile + ")."
	for _, a := range absent {
		s += " " + a
	}
	return s
}
