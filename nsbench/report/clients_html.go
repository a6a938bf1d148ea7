package report

import (
	"fmt"
	"html/template"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The many-client sweep's files beside ClientsReportFile and
// ClientsChartFile.
const (
	ClientsChartDarkFile = "clients-chart-dark.svg"
	ClientsHTMLFile      = "clients-report.html"
)

// clientsPageLine is the Markdown's pointer to the HTML page, which the
// page itself leaves out.
const clientsPageLine = "The chart in dark: [" + ClientsChartDarkFile + "](" + ClientsChartDarkFile + "). " +
	"The tables and the chart on one page: [" + ClientsHTMLFile + "](" + ClientsHTMLFile + ")."

// ClientsFiles renders every file of a sweep's report: the Markdown, the
// chart in both themes and the HTML page. A sweep without a row has no
// chart: its Body is nil, for the writer to remove an old one. A run and
// `twnsbench report` on its saved document both render from nothing but
// the document, so both give the same bytes.
func ClientsFiles(c *results.Clients) []File {
	var light, dark []byte
	if len(c.Rows) > 0 {
		light, dark = ClientsChart(c, Light), clientsChart(c, Dark, "")
	}
	return []File{{Name: ClientsReportFile, Body: ClientsMarkdown(c)}, {Name: ClientsChartFile, Body: light},
		{Name: ClientsChartDarkFile, Body: dark}, {Name: ClientsHTMLFile, Body: ClientsHTML(c)}}
}

// ClientsHTML renders the sweep as one self-contained page, as HTML does
// a run: the Markdown's every block converted, the chart inline in both
// themes (the reader's colour scheme chooses), the warnings first and a
// table of contents.
func ClientsHTML(c *results.Clients) []byte {
	ids := map[string]int{"contents": 1, "warnings": 1, "charts": 1}
	page := mdConvert([]string{clientsPageLine}).html
	p := pageOf(string(ClientsMarkdown(c)), ids, func(b mdBlock) bool { return b.image != "" || b.html == page })
	p.Warnings = clientsWarnings(c)
	fd := pageFigure{ID: uniqueID(ids, "chart-many-clients"), Title: "Many clients", File: ClientsChartFile, DarkFile: ClientsChartDarkFile}
	if len(c.Rows) > 0 {
		fd.Light = template.HTML(clientsChart(c, Light, fd.ID+"-light-"))
		fd.Dark = template.HTML(clientsChart(c, Dark, fd.ID+"-dark-"))
	} else {
		fd.Absent = "No chart: the sweep measured no client count."
	}
	p.Figures = []pageFigure{fd}
	return renderPage(p)
}

// clientsWarnings is what qualifies the sweep's numbers: an incomplete
// sweep, skipped transports, rows that measured nothing, clients not
// measured, teardown residue and WAN rows off their condition.
func clientsWarnings(c *results.Clients) []pageWarning {
	var ws []pageWarning
	if !c.Complete {
		reason := c.Incomplete
		if reason == "" {
			reason = "the sweep did not reach its end"
		}
		ws = append(ws, pageWarning{Text: "Incomplete sweep: " + reason + "."})
	}
	if n := len(c.Skipped); n > 0 {
		ws = append(ws, pageWarning{Text: plural(n, "transport", "transports") + " skipped."})
	}
	failed, missing, loaded, residue, unverified := 0, 0, 0, 0, 0
	for _, r := range c.Rows {
		if r.WAN != nil && !r.WAN.Verification.OK {
			unverified++
		}
		if r.Error != "" {
			failed++
			continue
		}
		loaded += r.N
		missing += max(r.N-len(r.PerClientMbps), 0)
		if r.Timing != nil && len(r.Timing.Residue) > 0 {
			residue++
		}
	}
	if failed > 0 {
		ws = append(ws, pageWarning{Text: plural(failed, "client count", "client counts") + " failed: nothing of them was measured."})
	}
	if missing > 0 {
		ws = append(ws, pageWarning{Text: fmt.Sprintf("%d of %d clients loaded were not measured: their rows' aggregates are lower bounds and their fairness is not computed.", missing, loaded)})
	}
	if residue > 0 {
		ws = append(ws, pageWarning{Text: plural(residue, "teardown", "teardowns") + " left something behind."})
	}
	if unverified > 0 {
		ws = append(ws, pageWarning{Text: plural(unverified, "WAN row", "WAN rows") + " failed verification: what was measured is off the configured condition (see Verification)."})
	}
	return ws
}
