package report

import (
	"math"

	"github.com/twnsbench/twnsbench/nsbench/report/svg"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// ClientsChartFile is the many-client sweep's chart inside the output
// directory.
const ClientsChartFile = "clients-chart.svg"

// clientsPanel is one plot of the many-client chart: a figure of a row
// against N, absent when the row did not measure it.
type clientsPanel struct {
	title, unit string
	value       func(results.ClientsRow) (float64, bool)
	axis        func(top float64) svg.Axis
}

var clientsPanels = []clientsPanel{
	{"Aggregate throughput", "Mbit/s, all clients at once", func(r results.ClientsRow) (float64, bool) {
		s := stats.SummarizeClients(r.N, r.PerClientMbps)
		return s.Aggregate, s.N > 0 && s.Missing == 0 // a lower bound is no point on the line
	}, svg.NiceAxis},
	{"Fairness", "Jain's index: 1 equal shares, 1/N one takes all", func(r results.ClientsRow) (float64, bool) {
		j := stats.SummarizeClients(r.N, r.PerClientMbps).Fairness
		return j, !math.IsNaN(j)
	}, func(float64) svg.Axis { return svg.Axis{Min: 0, Max: 1, Step: 0.2} }},
	{"Server peak memory", "MiB, the transport's processes", func(r results.ClientsRow) (float64, bool) {
		if r.Server == nil || r.Server.PeakKB == nil {
			return 0, false
		}
		return float64(*r.Server.PeakKB) / 1024, true
	}, svg.NiceAxis},
}

// ClientsChart draws the sweep as an SVG image: throughput, fairness and
// the server's peak memory against the number of clients, one line per
// transport through the Ns it measured. A panel without data says so.
// Like ClientsMarkdown, it is deterministic.
func ClientsChart(c *results.Clients, theme Theme) []byte { return clientsChart(c, theme, "") }

// clientsChart is ClientsChart with its element ids prefixed, to sit
// inline in a page beside another theme's copy.
func clientsChart(c *results.Clients, theme Theme, idPrefix string) []byte {
	v := &view{doc: &results.Document{Env: c.Env}, order: clientsTransports(c.Rows)}
	cv := newCanvas(v, theme, idPrefix)
	const height, top, plotH = 390.0, 110.0, 200.0
	cv.open(height, "Many clients on one server", "Aggregate throughput, Jain's fairness index and the server's peak memory against the number of clients, per transport")
	maxN := 1.0
	for _, r := range c.Rows {
		maxN = max(maxN, float64(r.N))
	}
	w := (chartWidth - 2*chartMargin - 2*panelGap) / 3
	for i, p := range clientsPanels {
		x := chartMargin + float64(i)*(w+panelGap)
		cv.Text(x, 84, 13, "bold", cv.Pal.Text, "", p.title)
		cv.Text(x, 98, 10, "", cv.Pal.Muted, "", svg.Truncate(p.unit, w, 10))
		lines := map[string][2][]float64{}
		peak := 0.0
		for _, tr := range v.order {
			var xs, ys []float64
			for _, r := range clientsRowsOf(c.Rows, tr) {
				if y, ok := p.value(r); ok {
					xs, ys = append(xs, float64(r.N)), append(ys, y)
					peak = max(peak, y)
				}
			}
			lines[tr] = [2][]float64{xs, ys}
		}
		f := svg.Frame{X: x + 40, Y: top, W: w - 48, H: plotH, XS: svg.NiceAxis(maxN), YS: p.axis(peak)}
		cv.Axes(f)
		cv.Text(f.X+f.W/2, f.Y+f.H+28, 10, "", cv.Pal.Muted, "middle", "clients")
		drawn := false
		for _, tr := range v.order {
			if pts := lines[tr]; len(pts[0]) > 0 {
				cv.Polyline(f, pts[0], pts[1], cv.transportColor(tr))
				drawn = true
			}
		}
		if !drawn {
			cv.Text(f.X+f.W/2, f.Y+f.H/2, 11, "", cv.Pal.Muted, "middle", "not measured")
		}
	}
	for i, tr := range v.order {
		rows := clientsRowsOf(c.Rows, tr)
		cv.LegendEntry(chartMargin+float64(i%2)*(chartWidth/2), height-34+float64(i/2)*16, cv.transportColor(tr), cv.transportDash(tr), clientsLineLabel(c, rows[len(rows)-1]))
	}
	cv.Printf("</svg>\n")
	return cv.Bytes()
}
