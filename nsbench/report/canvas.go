package report

import (
	"fmt"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/report/svg"
)

// canvas is one SVG figure of the report being written: svg's canvas
// (its palette, text, axes, lines and markers) and the view it draws
// from, which names the run in the header and gives each transport its
// colour and dash. The bar charts (chart), the latency CDFs (cdfChart)
// and the time series (tsChart) are each drawn on one.
type canvas struct {
	svg.Canvas
	v *view
}

func newCanvas(v *view, theme Theme, idPrefix string) canvas {
	return canvas{Canvas: svg.NewCanvas(theme, idPrefix), v: v}
}

// open starts the SVG document with the run's one-line subtitle.
func (c *canvas) open(height float64, title, desc string) {
	c.Open(height, title, c.subtitle(), desc)
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
			return c.Pal.Transports[i%len(c.Pal.Transports)]
		}
	}
	return c.Pal.Transports[0]
}

func (c *canvas) transportIndex(t string) int {
	for i, name := range c.v.order {
		if name == t {
			return i
		}
	}
	return 0
}

// transportDash is a transport's dash: past the palette's colours a
// colour repeats with the next of svg.Dashes.
func (c *canvas) transportDash(t string) string {
	return svg.Dashes[(c.transportIndex(t)/len(c.Pal.Transports))%len(svg.Dashes)]
}
