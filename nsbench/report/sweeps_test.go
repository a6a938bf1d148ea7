package report

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// sweepDoc: rr_sizes at two sizes for two transports, two runs each; tw's
// second run lacks its 1 KiB point.
func sweepDoc() *results.Document {
	point := func(key string, at int) results.Metric {
		return results.Metric{Key: key, Label: "transactions at " + sizeHeader(at), Unit: "trans/s", Better: results.BetterHigher,
			Curve: "transactions by message size", At: at}
	}
	s := func(tr string, run int, extra map[string]float64) results.Sample {
		return results.Sample{Transport: tr, Condition: "lan", Instrument: "rr_sizes", Run: run, Value: 1, Unit: "trans/s", Extra: extra}
	}
	return &results.Document{
		SchemaVersion: results.SchemaVersion,
		Env:           results.Env{Runs: 2},
		// The points declared out of size order: the report sorts them.
		Instruments: []results.Instrument{{Name: "rr_sizes", Metrics: []results.Metric{
			{Key: "value", Label: "transactions, geometric mean", Unit: "trans/s"}, point("tps_1024", 1024), point("tps_64", 64)}}},
		Transports: []results.Transport{{Name: "ssh", Label: "Pure SSH"}, {Name: "tw", Label: "SSH over tw"}},
		Conditions: []results.Condition{{Name: "lan", Label: "LAN"}},
		Samples: []results.Sample{
			s("ssh", 1, map[string]float64{"tps_64": 40000, "tps_1024": 30000}),
			s("ssh", 2, map[string]float64{"tps_64": 42000, "tps_1024": 32000}),
			s("tw", 1, map[string]float64{"tps_64": 9000, "tps_1024": 8000}),
			s("tw", 2, map[string]float64{"tps_64": 11000}),
		},
	}
}

func TestSweepTable(t *testing.T) {
	md := string(Markdown(sweepDoc()))
	for _, want := range []string{
		"## Size sweeps — LAN",
		"### rr_sizes: transactions by message size (trans/s, higher is better)",
		"| Transport | 64 B | 1 KiB |",
		"| Pure SSH | 41000 (40000–42000) | 31000 (30000–32000) |",
		"| SSH over tw | 10000 (9000–11000) | 8000 (8000–8000; n=1) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The points are in their own table, not repeated under More metrics.
	if strings.Contains(md, "transactions at 64 B") {
		t.Error("a sweep's point is listed under More metrics")
	}
	if !strings.Contains(md, "More charts:") || !strings.Contains(md, "[size sweeps]("+SweepsFile+")") {
		t.Errorf("no link to the sizes chart")
	}
}

func TestSweepChart(t *testing.T) {
	svg := string(SweepsChart(sweepDoc(), Light))
	if !strings.Contains(svg, "rr_sizes: transactions by message size") {
		t.Fatalf("no panel:\n%s", svg)
	}
	// One line per transport through its medians: Pure SSH's two points,
	// tw's two (its 1 KiB point from one run), from a y axis at 0: the
	// points' heights above the axis are as 41000 to 31000.
	lines := regexp.MustCompile(`<polyline class="series" points="([^"]*)"`).FindAllStringSubmatch(svg, -1)
	if len(lines) != 2 || len(strings.Fields(lines[0][1])) != 2 || len(strings.Fields(lines[1][1])) != 2 {
		t.Fatalf("lines %q", lines)
	}
	if !strings.Contains(svg, ">64 B<") || !strings.Contains(svg, ">1 KiB<") {
		t.Error("size labels missing")
	}
	zero := regexp.MustCompile(`y="([0-9.]+)" font-size="10" fill="[^"]*" text-anchor="end">0<`).FindStringSubmatch(svg)
	if zero == nil {
		t.Fatal("no 0 on the y axis")
	}
	var bottom float64
	fmt.Sscanf(zero[1], "%g", &bottom)
	bottom -= 3.5 // the label's baseline offset (svg/plot.go)
	var x64, y64, x1k, y1k float64
	if _, err := fmt.Sscanf(lines[0][1], "%g,%g %g,%g", &x64, &y64, &x1k, &y1k); err != nil {
		t.Fatal(err)
	}
	if r := (bottom - y64) / (bottom - y1k); r < 41000.0/31000-0.01 || r > 41000.0/31000+0.01 {
		t.Errorf("Pure SSH's points at heights %g and %g above the axis: ratio %.3f, want 41000/31000", bottom-y64, bottom-y1k, r)
	}
	// A document without sweeps has no sizes chart and says nothing of it.
	d := sweepDoc()
	d.Instruments[0].Metrics = d.Instruments[0].Metrics[:1]
	if SweepsChart(d, Light) != nil {
		t.Error("a chart without sweeps")
	}
	if md := string(Markdown(d)); strings.Contains(md, "size sweep") || strings.Contains(md, "Size sweeps") {
		t.Error("a report without sweeps mentions them")
	}
	if html := string(HTML(d)); strings.Contains(html, "Size sweeps") {
		t.Error("the HTML page of a document without sweeps has a sizes figure")
	}
}
