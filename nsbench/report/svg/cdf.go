package svg

// CDF panel layout, in SVG units.
const (
	CDFLegendLine = 15.0 // one legend line under a CDF panel's plot
	cdfTop        = 66.0 // title and what the panel is drawn from
	cdfBottom     = 44.0 // x tick labels and the axis title
)

// CDFPanel is a framed panel of cumulative distributions: y from 0 to 1,
// x on XS, a curve per row with its legend line under the plot.
type CDFPanel struct {
	ID         string // its element id, after the canvas's prefix
	Title      string
	Notes      []string // under the title: what the panel is drawn from
	XLabel     string
	XS         Axis
	LegendRows int     // the legend lines the panel leaves room for
	PlotLeft   float64 // room left of the plot for the y tick labels
	Curves     []Curve
}

// Curve is one row's distribution on a CDF panel.
type Curve struct {
	Key, Label  string // its data-transport attribute; its legend's label
	Color, Dash string
	Steps       [][2]float64 // a step curve (stepCurve), none when empty
	End         float64      // where the curve runs on flat to
	Censored    [][2]float64 // a censoredTick at each
	Quantiles   [][2]float64 // a marker at each
	Marker      int          // the markers' shape (marker's round)
}

// Draw draws p on c in the box at (x, y) of w × h.
func (p CDFPanel) Draw(c *Canvas, x, y, w, h float64) {
	c.Printf(`<g class="panel cdf-panel" id="%s%s">`+"\n", c.IDPrefix, p.ID)
	c.Printf(`<rect x="%s" y="%s" width="%s" height="%s" rx="6" fill="%s" stroke="%s"/>`+"\n",
		N1(x), N1(y), N1(w), N1(h), c.Pal.Panel, c.Pal.Border)
	c.Text(x+PanelPad, y+22, fitSize(p.Title, w-2*PanelPad, 13, 9.5), "bold", c.Pal.Text, "", p.Title)
	for k, line := range p.Notes {
		c.FigureNote(x+PanelPad, y+38+14*float64(k), w-2*PanelPad, line)
	}
	f := Frame{X: x + p.PlotLeft, Y: y + cdfTop, W: w - p.PlotLeft - PanelPad, H: h - cdfTop - cdfBottom - CDFLegendLine*float64(p.LegendRows),
		XS: p.XS, YS: Axis{Min: 0, Max: 1, Step: 0.25}}
	c.Axes(f)
	c.Text(f.X+f.W, f.Y+f.H+26, 10.5, "", c.Pal.Muted, "end", p.XLabel)
	for j, l := range p.Curves {
		c.Printf(`<g class="cdf-line" data-transport="%s">`+"\n", Esc(l.Key))
		if len(l.Steps) > 0 {
			c.stepCurve(f, l.Steps, l.End, l.Color, l.Dash)
		}
		for _, t := range l.Censored {
			c.censoredTick(f, t[0], t[1], l.Color)
		}
		for _, q := range l.Quantiles {
			c.marker(f.Px(q[0]), f.Py(q[1]), l.Color, l.Marker)
		}
		c.Printf("</g>\n")
		c.LegendEntry(x+PanelPad, f.Y+f.H+cdfBottom+CDFLegendLine*float64(j), l.Color, l.Dash, l.Label)
	}
	c.Printf("</g>\n")
}
