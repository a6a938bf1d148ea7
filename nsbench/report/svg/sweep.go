package svg

// SweepPanel is a framed panel of a size sweep: the sizes evenly spaced on
// x (not to scale), y from 0, a line per row through its values.
type SweepPanel struct {
	ID          string // its element id, after the canvas's prefix and "sweep-"
	Title, Note string
	Sizes       []string // the x labels
	Lines       []Line
	Top         float64 // the largest value the y axis must reach
	PlotLeft    float64 // room left of the plot for the y tick labels
}

// Line is one row's line: its points (X[i], Y[i]) in Color.
type Line struct {
	Key   string // its data-transport attribute
	Color string
	X, Y  []float64
}

// Draw draws p on c in the box at (x, y) of w × h.
func (p SweepPanel) Draw(c *Canvas, x, y, w, h float64) {
	c.Printf(`<g class="panel sweep-panel" id="%ssweep-%s">`+"\n", c.IDPrefix, p.ID)
	c.Printf(`<rect x="%s" y="%s" width="%s" height="%s" rx="6" fill="%s" stroke="%s"/>`+"\n",
		N1(x), N1(y), N1(w), N1(h), c.Pal.Panel, c.Pal.Border)
	c.Text(x+10, y+18, 12.5, "bold", c.Pal.Text, "", Truncate(p.Title, w-20, 12.5))
	c.FigureNote(x+10, y+33, w-20, p.Note)
	n := len(p.Sizes)
	f := Frame{X: x + p.PlotLeft, Y: y + 44, W: w - p.PlotLeft - 16, H: h - 44 - 28,
		XS: Axis{Min: -0.5, Max: float64(n) - 0.5, Step: 1}, YS: NiceAxis(p.Top)}
	c.yGrid(f)
	for i, s := range p.Sizes {
		c.Text(f.Px(float64(i)), f.Y+f.H+14, 10, "", c.Pal.Muted, "middle", s)
	}
	for _, l := range p.Lines {
		c.Printf(`<g class="sweep-line" data-transport="%s">`+"\n", Esc(l.Key))
		c.Polyline(f, l.X, l.Y, l.Color)
		c.Printf("</g>\n")
	}
	c.Printf("</g>\n")
}
