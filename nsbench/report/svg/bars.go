package svg

// bars.go draws a panel of horizontal bars: a row per transport, each a
// bar from zero to its centre (or a stack of segments) with a whisker, its
// label left of it and its value right of it.

// Layout of a bar panel, in SVG user units (px).
const (
	PanelPad   = 14.0 // a panel's inner margin
	panelTop   = 58.0 // title and unit lines
	rowHeight  = 30.0
	barHeight  = 16.0
	axisHeight = 26.0
)

// BarPanelHeight is the height of a bar panel of rows rows.
func BarPanelHeight(rows int) float64 {
	return panelTop + float64(rows)*rowHeight + axisHeight
}

// BarPanel is one panel of bars as the report decided it.
type BarPanel struct {
	ID          string // its element id, after the canvas's prefix
	Title, Unit string
	Legend      []Swatch // drawn right-aligned on the unit line: the stacked segments' colours
	Rows        []BarRow
}

// Swatch is a legend entry: a square of Color, then Name.
type Swatch struct{ Name, Color string }

// BarRow is one transport's row of a panel.
type BarRow struct {
	Key   string // its data-transport attribute
	Label string // left of the bar, cut to fit
	// Note is drawn instead of a bar ("no data", "skipped"); "" draws the
	// bar.
	Note         string
	Title, Value string    // the bar's tooltip, and its label right of it
	Color        string    // a plain bar's fill
	Segments     []Segment // stacked from zero in place of a plain bar
	Bar          Extent
}

// Segment is one part of a stacked bar: its value, and its name (in its
// class) and colour as the panel's legend shows them.
type Segment struct {
	Swatch
	Value float64
}

// Extent is what a bar reaches: its centre, and its whisker from Lo to Hi
// when Whisker (the panel's scale reaches Hi either way).
type Extent struct {
	Center, Lo, Hi float64
	Whisker        bool
}

// Draw draws p on c in the box at (x, y) of w × h: its frame, title and
// unit, and its rows on a scale from zero to a nice maximum; "no data"
// when no row has a bar.
func (p BarPanel) Draw(c *Canvas, x, y, w, h float64) {
	c.Printf(`<g class="panel" id="%spanel-%s">`+"\n", c.IDPrefix, Esc(p.ID))
	c.Printf(`<rect x="%s" y="%s" width="%s" height="%s" rx="6" fill="%s" stroke="%s"/>`+"\n",
		N1(x), N1(y), N1(w), N1(h), c.Pal.Panel, c.Pal.Border)
	c.Text(x+PanelPad, y+24, fitSize(p.Title, w-2*PanelPad, 14, 10), "bold", c.Pal.Text, "", p.Title)
	c.Text(x+PanelPad, y+42, 11.5, "", c.Pal.Muted, "", p.Unit)
	if len(p.Legend) > 0 {
		legend(c, p.Legend, x+w-PanelPad, y+42)
	}
	hasData := false
	for _, r := range p.Rows {
		hasData = hasData || r.Note == ""
	}
	if !hasData {
		c.Printf(`<text class="nodata" x="%s" y="%s" font-size="14" fill="%s" text-anchor="middle">no data</text>`+"\n",
			N1(x+w/2), N1(y+panelTop+(h-panelTop)/2), c.Pal.Muted)
		c.Printf("</g>\n")
		return
	}

	labelW := 0.0
	valueW := 0.0
	for _, r := range p.Rows {
		labelW = max(labelW, TextWidth(r.Label, 12))
		valueW = max(valueW, TextWidth(r.Value, 12))
	}
	labelW = min(labelW, 190)
	x0 := x + PanelPad + labelW + 10 // the bars' zero
	x1 := x + w - PanelPad - valueW - 8
	top := y + panelTop
	scaleMax, step := niceScale(maxExtent(p.Rows))
	scale := func(v float64) float64 { return x0 + (x1-x0)*v/scaleMax }

	// Grid and tick labels under the bars.
	rowsBottom := top + float64(len(p.Rows))*rowHeight
	for i := 0; float64(i)*step <= scaleMax*(1+1e-9); i++ {
		v := float64(i) * step
		gx := scale(v)
		c.Printf(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1"/>`+"\n",
			N1(gx), N1(top-4), N1(gx), N1(rowsBottom), c.Pal.Grid)
		c.Text(gx, rowsBottom+14, 10.5, "", c.Pal.Muted, "middle", tickLabel(v, step))
	}

	for i, r := range p.Rows {
		rowY := top + float64(i)*rowHeight
		mid := rowY + rowHeight/2
		c.Text(x+PanelPad+labelW, mid+4, 12, "", c.Pal.Text, "end", Truncate(r.Label, labelW, 12))
		if r.Note != "" {
			c.Printf(`<text class="no-bar" x="%s" y="%s" font-size="12" font-style="italic" fill="%s">%s</text>`+"\n",
				N1(x0+6), N1(mid+4), c.Pal.Muted, Esc(r.Note))
			continue
		}
		c.Printf(`<g class="bar" data-transport="%s">`+"\n", Esc(r.Key))
		c.Printf(`<title>%s</title>`+"\n", Esc(r.Title))
		if r.Segments != nil {
			sx := x0
			for _, s := range r.Segments {
				sw := scale(s.Value) - x0
				c.Printf(`<rect class="segment segment-%s" x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n",
					s.Name, N1(sx), N1(mid-barHeight/2), N1(sw), N1(barHeight), s.Color)
				sx += sw
			}
		} else {
			c.Printf(`<rect x="%s" y="%s" width="%s" height="%s" rx="2" fill="%s"/>`+"\n",
				N1(x0), N1(mid-barHeight/2), N1(scale(r.Bar.Center)-x0), N1(barHeight), r.Color)
		}
		end := scale(r.Bar.Center)
		if r.Bar.Whisker {
			lo, hi := scale(r.Bar.Lo), scale(r.Bar.Hi)
			c.Printf(`<path class="whisker" d="M%s %sH%sM%s %sV%sM%s %sV%s" stroke="%s" stroke-width="1.5" fill="none"/>`+"\n",
				N1(lo), N1(mid), N1(hi), N1(lo), N1(mid-5), N1(mid+5), N1(hi), N1(mid-5), N1(mid+5), c.Pal.Whisker)
			end = max(end, hi)
		}
		c.Text(end+6, mid+4, 12, "", c.Pal.Text, "", r.Value)
		c.Printf("</g>\n")
	}
	c.Printf("</g>\n")
}

// legend draws the swatches on c right-aligned, ending at x.
func legend(c *Canvas, swatches []Swatch, x, y float64) {
	for i := len(swatches) - 1; i >= 0; i-- {
		s := swatches[i]
		x -= TextWidth(s.Name, 11.5)
		c.Text(x, y, 11.5, "", c.Pal.Muted, "", s.Name)
		x -= 14
		c.Printf(`<rect class="legend-%s" x="%s" y="%s" width="10" height="10" fill="%s"/>`+"\n", s.Name, N1(x), N1(y-9), s.Color)
		x -= 10
	}
}

// maxExtent is the largest value a panel must show: bar ends and whisker
// ends.
func maxExtent(rows []BarRow) float64 {
	m := 0.0
	for _, r := range rows {
		if r.Note == "" {
			m = max(m, r.Bar.Center, r.Bar.Hi)
		}
	}
	return m
}
