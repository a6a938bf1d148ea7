package report

import (
	"fmt"
	"math"

	"github.com/twnsbench/twnsbench/nsbench/report/svg"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The differential flame graph's geometry: one row per stack depth, the
// deepest drawn, and the narrowest frame that gets a label.
const (
	flameRow      = 16.0
	flameMaxDepth = 48
	flameLabelMin = 36.0
	flameCharW    = 6.6 // px per character of the 11 px label font
)

// flameColours are the ends of the colour scale: B's share larger (red)
// or smaller (blue) than A's; a frame whose share did not change has the
// theme's neutral fill.
var flameColours = struct{ more, less [3]float64 }{more: [3]float64{215, 48, 39}, less: [3]float64{49, 130, 189}}

// profileChart draws, per build pair and condition, B's merged call tree
// as a flame graph (root at the bottom, a frame's width its share of B's
// samples), each frame coloured by the change of its inclusive share
// B − A: red more, blue less, the strongest change of the panel in full
// colour. Frames only A had are not drawn (the section's table lists
// them).
func profileChart(v *view, theme Theme, idPrefix string) []byte {
	c := newCanvas(v, theme, idPrefix)
	var panels []results.ProfileDiff
	for _, d := range profileComparisons(v.doc) {
		if d.Flame != nil && d.Flame.B > 0 {
			panels = append(panels, d)
		}
	}
	heights := make([]float64, len(panels))
	total := 80.0
	for i, d := range panels {
		heights[i] = 44 + flameRow*float64(min(depth(d.Flame), flameMaxDepth))
		total += heights[i] + 16
	}
	c.open(total, "Where the time went: B against A",
		"Differential flame graphs of the roles' sampled CPU stacks: widths are shares of build B's samples, red frames take a larger share in B than in A, blue a smaller.")
	y := 80.0
	for i, d := range panels {
		flamePanel(&c, d, y, heights[i])
		y += heights[i] + 16
	}
	c.Printf("</svg>\n")
	return c.Bytes()
}

// flamePanel draws one comparison's flame graph in the band from top to
// top+height.
func flamePanel(c *canvas, d results.ProfileDiff, top, height float64) {
	c.Text(chartMargin, top+16, 13, "bold", c.Pal.Text, "",
		fmt.Sprintf("%s · %s: %s (width) against %s, %s", d.Transport, c.conditionLabel(d.Condition), d.B.Row, d.A.Row, plural(d.Rounds, "round", "rounds")))
	root := d.Flame
	scale := maxChange(root, root)
	if scale == 0 {
		scale = 1
	}
	width := chartWidth - 2*chartMargin
	bottom := top + height - flameRow
	var draw func(n *results.FlameNode, x, w float64, level int)
	draw = func(n *results.FlameNode, x, w float64, level int) {
		if n == nil || level >= flameMaxDepth || w < 0.5 {
			return
		}
		y := bottom - flameRow*float64(level)
		delta := shareChange(n, root)
		c.Printf(`<g><title>%s</title><rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="%s" stroke-width="0.5"/>`,
			svg.Esc(fmt.Sprintf("%s — B %s, A %s, B − A %s pp", n.Name, pctOf(n.B, root.B), pctOf(n.A, root.A), signed3(100*delta))),
			svg.N1(x), svg.N1(y), svg.N1(w), svg.N1(flameRow-1), flameFill(c.Pal, delta/scale), c.Pal.BG)
		if w >= flameLabelMin {
			c.Printf(`<text x="%s" y="%s" font-size="11" fill="%s">%s</text>`, svg.N1(x+3), svg.N1(y+flameRow-5), c.Pal.Text, svg.Esc(fitLabel(n.Name, w-6)))
		}
		c.Printf("</g>\n")
		cx := x
		for _, ch := range n.Children {
			if ch == nil || n.B <= 0 {
				continue
			}
			cw := w * float64(ch.B) / float64(n.B)
			draw(ch, cx, cw, level+1)
			cx += cw
		}
	}
	draw(root, chartMargin, width, 0)
}

// shareChange is n's inclusive share of B's samples minus its share of
// A's (fractions).
func shareChange(n, root *results.FlameNode) float64 {
	var a, b float64
	if root.A > 0 {
		a = float64(n.A) / float64(root.A)
	}
	if root.B > 0 {
		b = float64(n.B) / float64(root.B)
	}
	return b - a
}

func maxChange(n, root *results.FlameNode) float64 {
	if n == nil {
		return 0
	}
	m := math.Abs(shareChange(n, root))
	for _, ch := range n.Children {
		m = max(m, maxChange(ch, root))
	}
	return m
}

func depth(n *results.FlameNode) int {
	if n == nil {
		return 0
	}
	d := 0
	for _, ch := range n.Children {
		d = max(d, depth(ch))
	}
	return d + 1
}

// flameFill mixes the theme's neutral fill towards red (t > 0) or blue
// (t < 0) by |t| ≤ 1.
func flameFill(pal svg.Palette, t float64) string {
	neutral := [3]float64{238, 238, 238}
	if pal.BG != svg.Palettes[Light].BG {
		neutral = [3]float64{61, 68, 77}
	}
	end := flameColours.more
	if t < 0 {
		end = flameColours.less
	}
	t = math.Min(1, math.Abs(t))
	var rgb [3]int
	for i := range rgb {
		rgb[i] = int(math.Round(neutral[i] + (end[i]-neutral[i])*t))
	}
	return fmt.Sprintf("#%02x%02x%02x", rgb[0], rgb[1], rgb[2])
}

func pctOf(n, total int64) string {
	if total == 0 {
		return dash
	}
	return num(100*float64(n)/float64(total), 1) + " %"
}

// fitLabel shortens s to fit w px, marking the cut with "…".
func fitLabel(s string, w float64) string {
	r := []rune(s)
	n := int(w / flameCharW)
	if len(r) <= n {
		return s
	}
	if n < 2 {
		return ""
	}
	return string(r[:n-1]) + "…"
}
