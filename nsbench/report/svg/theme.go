package svg

// Theme is a chart's colour scheme.
type Theme int

const (
	Light Theme = iota // dark text on white: bench-chart.svg
	Dark               // light text on GitHub's dark background: bench-chart-dark.svg
)

// Palette is one theme's colours. Transport colours go by report order;
// role colours are distinct from them, since a stacked bar's colours mean
// roles, not transports.
type Palette struct {
	BG, Panel, Border, Text, Muted, Grid, Whisker string
	Transports                                    []string
	Roles                                         []string // client, server, relay
}

// Palettes are the themes' colours.
var Palettes = map[Theme]Palette{
	Light: {
		BG: "#ffffff", Panel: "#f6f8fa", Border: "#d1d9e0", Text: "#1f2328", Muted: "#59636e",
		Grid: "#d1d9e0", Whisker: "#1f2328",
		Transports: []string{"#0969da", "#bf8700", "#1a7f37", "#8250df", "#cf222e"},
		Roles:      []string{"#1b7c83", "#bc4c00", "#bf3989"},
	},
	Dark: {
		BG: "#0d1117", Panel: "#151b23", Border: "#3d444d", Text: "#e6edf3", Muted: "#9198a1",
		Grid: "#3d444d", Whisker: "#e6edf3",
		Transports: []string{"#4493f8", "#d29922", "#3fb950", "#ab7df8", "#f85149"},
		Roles:      []string{"#39c5cf", "#f0883e", "#db61a2"},
	},
}

// Layout every figure shares, in SVG user units (px).
const (
	Width      = 960.0
	Margin     = 24.0
	fontFamily = "system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', Helvetica, Arial, sans-serif"
)
