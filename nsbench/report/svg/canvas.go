// Package svg draws the report's figures: a canvas with its palette,
// text, axes, lines, markers and legends, and the scales they are laid out
// on. The report decides what a figure shows; svg how it is drawn, in
// stable bytes.
package svg

import (
	"bytes"
	"fmt"
)

// Canvas is one SVG figure being written: its palette and what every
// figure draws with (its header, text, and plot.go's axes, lines and
// markers).
type Canvas struct {
	Pal Palette
	// IDPrefix starts every element id, so that several figures (a light
	// and a dark copy) can sit inline in one HTML page; "" in the files.
	IDPrefix string
	buf      bytes.Buffer
}

// NewCanvas is an empty figure in theme's colours (Light's for a theme
// it does not know).
func NewCanvas(theme Theme, idPrefix string) Canvas {
	pal, ok := Palettes[theme]
	if !ok {
		pal = Palettes[Light]
	}
	return Canvas{Pal: pal, IDPrefix: idPrefix}
}

// Open starts the SVG document: its size, accessible title and
// description, background, heading and a one-line subtitle.
func (c *Canvas) Open(height float64, title, subtitle, desc string) {
	c.Printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" role="img" aria-labelledby="%schart-title %schart-desc" font-family="%s">`+"\n",
		N1(Width), N1(height), N1(Width), N1(height), c.IDPrefix, c.IDPrefix, Esc(fontFamily))
	c.Printf(`<title id="%schart-title">%s</title>`+"\n", c.IDPrefix, Esc(title))
	c.Printf(`<desc id="%schart-desc">%s</desc>`+"\n", c.IDPrefix, Esc(desc))
	c.Printf(`<rect class="background" width="100%%" height="100%%" rx="8" fill="%s"/>`+"\n", c.Pal.BG)
	c.Text(Margin, 34, 18, "bold", c.Pal.Text, "", title)
	c.Text(Margin, 56, 12, "", c.Pal.Muted, "", subtitle)
}

// Printf writes raw SVG.
func (c *Canvas) Printf(format string, args ...any) { fmt.Fprintf(&c.buf, format, args...) }

// Bytes is what has been written.
func (c *Canvas) Bytes() []byte { return c.buf.Bytes() }

// Text writes one <text> element; s is escaped.
func (c *Canvas) Text(x, y, size float64, weight, fill, anchor, s string) {
	attrs := fmt.Sprintf(`x="%s" y="%s" font-size="%s" fill="%s"`, N1(x), N1(y), N1(size), fill)
	if weight != "" {
		attrs += ` font-weight="` + weight + `"`
	}
	if anchor != "" {
		attrs += ` text-anchor="` + anchor + `"`
	}
	c.Printf("<text %s>%s</text>\n", attrs, Esc(s))
}
