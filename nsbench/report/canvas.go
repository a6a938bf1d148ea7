package report

import (
	"bytes"
	"fmt"
	"strings"
)

// canvas is one SVG figure of the report being written: the view it
// draws from, its palette, and what every figure draws with (its header,
// text, the transports' colours and dashes, and plot.go's axes, lines
// and markers). The bar charts (chart), the latency CDFs (cdfChart) and
// the time series (tsChart) are each drawn on one.
type canvas struct {
	v   *view
	pal palette
	// idPrefix starts every element id, so that several figures (a light
	// and a dark copy) can sit inline in one HTML page; "" in the files.
	idPrefix string
	buf      bytes.Buffer
}

func newCanvas(v *view, theme Theme, idPrefix string) canvas {
	pal, ok := palettes[theme]
	if !ok {
		pal = palettes[Light]
	}
	return canvas{v: v, pal: pal, idPrefix: idPrefix}
}

// open starts the SVG document: its size, accessible title and
// description, background, heading and the run's one-line subtitle.
func (c *canvas) open(height float64, title, desc string) {
	c.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" role="img" aria-labelledby="%schart-title %schart-desc" font-family="%s">`+"\n",
		n1(chartWidth), n1(height), n1(chartWidth), n1(height), c.idPrefix, c.idPrefix, esc(fontFamily))
	c.printf(`<title id="%schart-title">%s</title>`+"\n", c.idPrefix, esc(title))
	c.printf(`<desc id="%schart-desc">%s</desc>`+"\n", c.idPrefix, esc(desc))
	c.printf(`<rect class="background" width="100%%" height="100%%" rx="8" fill="%s"/>`+"\n", c.pal.bg)
	c.text(chartMargin, 34, 18, "bold", c.pal.text, "", title)
	c.text(chartMargin, 56, 12, "", c.pal.muted, "", c.subtitle())
}

func (c *canvas) subtitle() string {
	parts := []string{}
	if g := c.v.doc.Env.Generated; g != "" {
		parts = append(parts, "Generated "+g)
	}
	if cpu := cpuText(c.v.doc.Env); cpu != "" {
		parts = append(parts, cpu)
	}
	if k := c.v.doc.Env.Kernel; k != "" {
		parts = append(parts, "kernel "+k)
	}
	if r := c.v.doc.Env.Runs; r > 0 {
		runs := plural(r, "run", "runs") + " per cell"
		if c.v.doc.Env.RunsAuto != nil {
			runs = fmt.Sprintf("runs per cell fixed by a %d-run pilot, at most %d (--runs auto)", r, c.v.doc.Env.RunsAuto.MaxRuns)
		}
		parts = append(parts, runs)
	}
	return strings.Join(parts, " · ")
}

// conditionLabel is the view's, with an unlabelled condition's name in
// capitals (the reference chart's "LAN", "WAN").
func (c *canvas) conditionLabel(name string) string {
	if l := c.v.conditionLabel(name); l != name {
		return l
	}
	return strings.ToUpper(name)
}

func (c *canvas) transportColor(t string) string {
	for i, name := range c.v.order {
		if name == t {
			return c.pal.transports[i%len(c.pal.transports)]
		}
	}
	return c.pal.transports[0]
}

func (c *canvas) printf(format string, args ...any) { fmt.Fprintf(&c.buf, format, args...) }

// text writes one <text> element; s is escaped.
func (c *canvas) text(x, y, size float64, weight, fill, anchor, s string) {
	attrs := fmt.Sprintf(`x="%s" y="%s" font-size="%s" fill="%s"`, n1(x), n1(y), n1(size), fill)
	if weight != "" {
		attrs += ` font-weight="` + weight + `"`
	}
	if anchor != "" {
		attrs += ` text-anchor="` + anchor + `"`
	}
	c.printf("<text %s>%s</text>\n", attrs, esc(s))
}
