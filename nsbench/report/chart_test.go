package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// docsChart is docs/results.md's picture: the reference run drawn by Chart.
const docsChart = "../../docs/bench-chart.svg"

// svgNode is a parsed SVG element, enough to find panels and bars.
type svgNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []svgNode  `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// all returns n and its descendants whose class attribute is class.
func (n svgNode) all(class string) []svgNode {
	var out []svgNode
	if n.attr("class") == class {
		out = append(out, n)
	}
	for _, c := range n.Nodes {
		out = append(out, c.all(class)...)
	}
	return out
}

// texts is the character data of n's <text> elements, in document order.
func (n svgNode) texts() []string {
	var out []string
	if n.XMLName.Local == "text" {
		out = append(out, n.Text)
	}
	for _, c := range n.Nodes {
		out = append(out, c.texts()...)
	}
	return out
}

// parseSVG checks that b is well-formed XML, token by token to the end, and
// returns its tree.
func parseSVG(t *testing.T, b []byte) svgNode {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
	}
	var root svgNode
	if err := xml.Unmarshal(b, &root); err != nil {
		t.Fatalf("chart does not parse: %v", err)
	}
	if root.XMLName.Local != "svg" || root.XMLName.Space != "http://www.w3.org/2000/svg" {
		t.Fatalf("root element is %v, want svg in the SVG namespace", root.XMLName)
	}
	return root
}

// panelsByID maps "panel-…" ids to their groups.
func panelsByID(root svgNode) map[string]svgNode {
	m := map[string]svgNode{}
	for _, p := range root.all("panel") {
		m[p.attr("id")] = p
	}
	return m
}

func barTransports(panel svgNode) []string {
	var ts []string
	for _, b := range panel.all("bar") {
		ts = append(ts, b.attr("data-transport"))
	}
	return ts
}

func referenceDoc(t *testing.T) *results.Document {
	t.Helper()
	d, err := results.Read(referenceJSON)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The reference run has every panel's data: each panel draws one bar per
// transport, in report order, in both themes.
func TestChartReferenceOneBarPerTransport(t *testing.T) {
	for _, theme := range []Theme{Light, Dark} {
		root := parseSVG(t, Chart(referenceDoc(t), theme))
		panels := panelsByID(root)
		want := panelsFor(newView(referenceDoc(t)))
		if len(panels) != 6 || len(want) != 6 {
			t.Fatalf("theme %d: %d panels (layout %d), want the reference's 6", theme, len(panels), len(want))
		}
		for _, p := range want {
			got := strings.Join(barTransports(panels["panel-"+p.id]), ",")
			if got != "ssh,wireguard,tw" {
				t.Errorf("theme %d, panel %s: bars %q, want ssh,wireguard,tw", theme, p.id, got)
			}
		}
		if nd := root.all("nodata"); len(nd) != 0 {
			t.Errorf("theme %d: %d panels say no data", theme, len(nd))
		}
	}
}

// Each bar is labelled with its median at the report's precision, and the
// stacked CPU bar has one segment per role.
func TestChartLabels(t *testing.T) {
	panels := panelsByID(parseSVG(t, Chart(referenceDoc(t), Light)))
	want := map[string][]string{
		"lan-iperf3-1":   {"3.64", "1.20", "0.97"},
		"lan-scp":        {"359", "149", "122"},
		"lan-tcp_rr-p50": {"29", "135", "682"},
		"wan-iperf3-4":   {"0.10", "0.10", "0.03"},
		"wan-tcp_rr-p50": {"30503", "30510", "31524"},
		// 12.9 + 17.1 + 0.0 of the report's CPU column.
		"lan-scp-cpu": {"30.0", "32.1", "407.4"},
	}
	for id, labels := range want {
		bars := panels["panel-"+id].all("bar")
		if len(bars) != len(labels) {
			t.Fatalf("panel %s: %d bars", id, len(bars))
		}
		for i, b := range bars {
			if got := b.texts(); len(got) != 1 || got[0] != labels[i] {
				t.Errorf("panel %s bar %d: label %q, want %q", id, i, got, labels[i])
			}
		}
	}
	cpu := panels["panel-lan-scp-cpu"].all("bar")[0]
	for _, role := range cpuRoles {
		if n := len(cpu.all("segment segment-" + role)); n != 1 {
			t.Errorf("CPU bar has %d %s segments, want 1", n, role)
		}
	}
}

// A LAN-only run with a skipped transport: no WAN panel is drawn (there
// was no WAN condition), no panel says "no data", and the skipped
// transport gets no bar.
func TestChartNoData(t *testing.T) {
	root := parseSVG(t, Chart(twnsbenchDoc(), Light))
	panels := panelsByID(root)
	var ids []string
	for _, p := range panelsFor(newView(twnsbenchDoc())) {
		ids = append(ids, p.id)
	}
	if got := strings.Join(ids, ","); got != "lan-iperf3-1,lan-scp,lan-tcp_rr-p50,lan-scp-cpu" || len(panels) != 4 {
		t.Errorf("panels %s (%d drawn): want the LAN's four, no WAN panel", got, len(panels))
	}
	if nd := root.all("nodata"); len(nd) != 0 {
		t.Errorf("%d panels say no data", len(nd))
	}
	wantBars := map[string]string{
		"lan-iperf3-1":   "ssh,tw",
		"lan-scp":        "ssh,tw",
		"lan-tcp_rr-p50": "ssh", // tw's TCP_RR failed
		"lan-scp-cpu":    "ssh,tw",
	}
	for id, want := range wantBars {
		if got := strings.Join(barTransports(panels["panel-"+id]), ","); got != want {
			t.Errorf("panel %s: bars %q, want %q", id, got, want)
		}
	}
	var notes []string
	for _, n := range panels["panel-lan-tcp_rr-p50"].all("no-bar") {
		notes = append(notes, n.Text)
	}
	if got := strings.Join(notes, ","); got != "skipped,no data" {
		t.Errorf("TCP_RR panel notes %q, want skipped (wireguard), no data (tw)", got)
	}
	// ssh has two iperf3-1 runs of three: the label says so.
	if got := panels["panel-lan-iperf3-1"].all("bar")[0].texts(); len(got) != 1 || got[0] != "3.60 (n=2)" {
		t.Errorf("thin cell label %q, want 3.60 (n=2)", got)
	}
}

// A panel of an instrument the run did not run is not drawn; when none of
// the key chart's instruments ran, there is no key chart, and the report
// says why instead of linking it.
func TestChartPanelsOnlyForInstrumentsRun(t *testing.T) {
	d := twnsbenchDoc()
	d.Instruments = []results.Instrument{{Name: instIperf1}, {Name: instIperf4}, {Name: instTCPRR}} // no scp
	d.Samples = slices.DeleteFunc(d.Samples, func(s results.Sample) bool { return s.Instrument == instScp })
	var ids []string
	for _, p := range panelsFor(newView(d)) {
		ids = append(ids, p.id)
	}
	if got := strings.Join(ids, ","); got != "lan-iperf3-1,lan-tcp_rr-p50" {
		t.Errorf("panels %s: want iperf3 and TCP_RR only", got)
	}
	// An impaired condition without iperf3's 4 streams: its 1 stream is
	// the condition's throughput panel.
	d.Conditions = append(d.Conditions, results.Condition{Name: "wan"})
	d.Instruments = []results.Instrument{{Name: instIperf1}, {Name: instTCPRR}}
	ids = nil
	for _, p := range panelsFor(newView(d)) {
		ids = append(ids, p.id)
	}
	if got := strings.Join(ids, ","); got != "lan-iperf3-1,lan-tcp_rr-p50,wan-iperf3-1,wan-tcp_rr-p50" {
		t.Errorf("panels %s: want the WAN's iperf3 1 stream in place of its 4 streams", got)
	}
	d.Instruments = []results.Instrument{{Name: instPing}}
	d.Samples = nil
	if ps := panelsFor(newView(d)); len(ps) != 0 {
		t.Errorf("%d panels for a run of ping alone", len(ps))
	}
	md := string(Markdown(d))
	if strings.Contains(md, "!["+"benchmark chart]") || !strings.Contains(md, "No key-results chart: none of its instruments (iperf3, scp, TCP_RR) ran.") {
		t.Errorf("a run without the key chart's instruments links the chart or says nothing:\n%s", md)
	}
	for _, f := range Files(d) {
		if f.Name == ChartFile && f.Body != nil {
			t.Error("the key chart is written for a run without its instruments")
		}
	}
}

func TestChartEscapesText(t *testing.T) {
	d := twnsbenchDoc()
	d.Transports[0].Label = `SSH <"fast"> & 'small'`
	d.Env.Generated = "]]> <!-- not a comment -->"
	d.Conditions[0].Label = "LAN & <loopback>"
	b := Chart(d, Dark)
	root := parseSVG(t, b)
	all := strings.Join(root.texts(), "\n")
	for _, want := range []string{`SSH <"fast"> & 'small'`, "LAN & <loopback>", "]]> <!-- not a comment -->"} {
		if !strings.Contains(all, want) {
			t.Errorf("chart text lacks %q after parsing", want)
		}
	}
}

func TestChartDeterministic(t *testing.T) {
	first := Chart(referenceDoc(t), Light)
	for i := 0; i < 20; i++ {
		if got := Chart(referenceDoc(t), Light); !bytes.Equal(got, first) {
			t.Fatalf("render %d differs from the first", i+2)
		}
	}
	if bytes.Equal(first, Chart(referenceDoc(t), Dark)) {
		t.Error("light and dark charts are identical")
	}
	if Chart(nil, Light) != nil {
		t.Error("Chart(nil) is not nil")
	}
}

// Whiskers come from the document's cells when it has them (their
// confidence interval), else from the runs' min–max; the footer says which.
func TestChartWhiskerSource(t *testing.T) {
	d := referenceDoc(t)
	if _, ok := spreadFor(d).(minMaxSpread); !ok {
		t.Fatalf("a document without cells: source %T, want minMaxSpread", spreadFor(d))
	}
	footer := func(d *results.Document) string {
		texts := parseSVG(t, Chart(d, Light)).texts()
		return texts[len(texts)-2] // the caption, above the CPU note
	}
	if f := footer(d); !strings.Contains(f, "whiskers: min–max of the runs.") {
		t.Errorf("footer without cells: %q", f)
	}
	d.Cells = results.Cells(d)
	if f := footer(d); !strings.Contains(f, "whiskers: 75 % confidence interval of the median (too few runs for 95 %: the min–max range).") {
		t.Errorf("footer with 3-run cells: %q", f)
	}

	// Six runs: the 96.9 % interval is narrower than min–max, and the
	// whisker follows the cell, not the samples.
	var xs []float64
	var samples []results.Sample
	for i, v := range []float64{1, 2, 3, 4, 5, 60} {
		xs = append(xs, v)
		samples = append(samples, results.Sample{Transport: "ssh", Condition: "lan", Instrument: instIperf1, Run: i + 1, Value: v})
	}
	src := spreadFor(&results.Document{Cells: results.Cells(&results.Document{Samples: samples})})
	k := metricKey{"ssh", "lan", instIperf1, "value"}
	got := src.spread(k, exact(xs...))
	if got.lo != 1 || got.hi != 60 || got.center != 3.5 || got.level < 0.96 || got.n != 6 {
		t.Errorf("six-run spread = %+v, want the cell's [1, 60] at 96.9 %%", got)
	}
	// A cell that does not match the samples (hand-edited document) is
	// not used.
	if got := src.spread(k, exact(xs[:4]...)); got.level != 0 || got.hi != 4 {
		t.Errorf("mismatched cell used: %+v", got)
	}
	if got := src.spread(metricKey{"tw", "lan", instIperf1, "value"}, exact(2, 4)); got.level != 0 || got.center != 3 {
		t.Errorf("missing cell: %+v, want min–max", got)
	}
}

// exact are readings of xs, none a bound.
func exact(xs ...float64) []results.Reading {
	rs := make([]results.Reading, len(xs))
	for i, x := range xs {
		rs[i] = results.Reading{Value: x}
	}
	return rs
}

// docs/bench-chart.svg, docs/results.md's picture, is what Chart draws from the
// reference run now: it cannot go stale.
func TestDocsChartUpToDate(t *testing.T) {
	got := Chart(referenceDoc(t), Light)
	if *update {
		if err := os.WriteFile(docsChart, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(docsChart)
	if err != nil {
		t.Fatalf("%v (run `go test ./nsbench/report/ -run TestDocsChartUpToDate -update` to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: rerun `go test ./nsbench/report/ -run TestDocsChartUpToDate -update`", docsChart)
	}
}

// Every impaired condition gets its own pair of panels, titled with its
// label; one impaired condition keeps the reference's six panels and ids.
func TestChartPanelsPerCondition(t *testing.T) {
	ids := func(ps []chartPanel) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.id)
		}
		return strings.Join(s, " ")
	}
	if got, want := ids(panelsFor(newView(referenceDoc(t)))), "lan-iperf3-1 lan-scp lan-tcp_rr-p50 wan-iperf3-4 lan-scp-cpu wan-tcp_rr-p50"; got != want {
		t.Errorf("reference layout %q, want %q", got, want)
	}
	d := referenceDoc(t)
	d.Conditions = []results.Condition{{Name: "lan", Label: "LAN"}, {Name: "wan1", Label: "WAN 1 (20 ms RTT, 0.5 % loss)"},
		{Name: "wan2", Label: "WAN 2 (40 ms RTT, 0.2 % loss, ±5 ms jitter, 100 Mbit/s)"}}
	if got, want := ids(panelsFor(newView(d))), "lan-iperf3-1 lan-scp lan-tcp_rr-p50 wan1-iperf3-4 lan-scp-cpu wan1-tcp_rr-p50 wan2-iperf3-4 wan2-tcp_rr-p50"; got != want {
		t.Errorf("two WAN profiles: %q, want %q", got, want)
	}
	svg := string(Chart(d, Light))
	if !strings.Contains(svg, "TCP_RR p50 latency — WAN 2 (40 ms RTT, 0.2 % loss, ±5 ms jitter, 100 Mbit/s)") {
		t.Error("the second profile's panel is not titled with its label")
	}
}

// panelByID is the panel group whose id is "panel-"+id.
func panelByID(t *testing.T, root svgNode, id string) svgNode {
	t.Helper()
	for _, p := range root.all("panel") {
		if p.attr("id") == "panel-"+id {
			return p
		}
	}
	t.Fatalf("no panel %q", id)
	return svgNode{}
}

// TestMetricsChartOwnCPUNotes: the metrics chart's "tunnel's own CPU"
// panel says what the tables' dash says: "no tunnel" for the plain row,
// "not attributable" for a kernel tunnel; never "no data", and never a
// 0.00 bar from the empty cgroups a document written before
// transport_cpu_absent carried (tunnelDoc is one). The footer then has no
// min–max whisker of those zeros to mix with the cells' levels.
func TestMetricsChartOwnCPUNotes(t *testing.T) {
	declared := func() *results.Document {
		d := tunnelDoc()
		d.Instruments = []results.Instrument{{Name: instIperf1, Metrics: []results.Metric{
			{Key: "value", Label: "goodput", Unit: "Gbit/s", Better: results.BetterHigher},
			{Key: results.TransportCPUPerGB, Label: "tunnel's own CPU per GB moved", Unit: "CPU-s/GB", Better: results.BetterLower},
		}}}
		return d
	}
	old := declared()
	old.Cells = results.Cells(old)
	current := declared()
	for i, s := range current.Samples {
		if s.Transport != "openvpn-tls" {
			current.Samples[i].TransportCPUSec = nil
			current.Samples[i].TransportCPUAbsent = "not attributable"
		}
	}
	current.Cells = results.Cells(current)
	for name, d := range map[string]*results.Document{"before transport_cpu_absent": old, "current": current} {
		root := parseSVG(t, MetricsChart(d, Light))
		panel := panelByID(t, root, "lan-iperf3-1-"+results.TransportCPUPerGB)
		notes := map[string]bool{}
		for _, n := range panel.all("no-bar") {
			notes[n.Text] = true
		}
		if !notes["no tunnel"] || !notes["not attributable"] || notes["no data"] || len(notes) != 2 {
			t.Errorf("%s: notes %v, want \"no tunnel\" and \"not attributable\"", name, notes)
		}
		for _, b := range panel.all("bar") {
			if tr := b.attr("data-transport"); tr != "openvpn-tls" {
				t.Errorf("%s: %s has a bar of its own CPU", name, tr)
			}
		}
		texts := root.texts()
		if f := texts[len(texts)-1]; strings.Contains(f, "0–") {
			t.Errorf("%s: footer %q mixes a min–max whisker in as a 0 %% level", name, f)
		}
	}
}

// TestChartFooterMixedWhiskers: where some bars have a cell's interval and
// others only the runs' min–max (a cell missing), the footer names both,
// never a range of levels from 0.
func TestChartFooterMixedWhiskers(t *testing.T) {
	c := &chart{levels: []float64{0.96875, 0, 0.978515625}}
	got := c.footerCaption()
	want := "whiskers: confidence intervals of the median, 96.9–97.9 %; min–max of the runs for 1 bar without one."
	if got != want {
		t.Errorf("footer %q\nwant   %q", got, want)
	}
	c.levels = []float64{0.75, 0.96875}
	if got, want := c.footerCaption(), "whiskers: confidence intervals of the median, 75–96.9 % (below 95 % with too few runs: the min–max range)."; got != want {
		t.Errorf("footer %q\nwant   %q", got, want)
	}
	c.levels = []float64{0.96875, 0.978515625}
	if got, want := c.footerCaption(), "whiskers: confidence intervals of the median, 96.9–97.9 %."; got != want {
		t.Errorf("footer %q\nwant   %q", got, want)
	}
	c.levels = []float64{0, 0}
	if got, want := c.footerCaption(), "whiskers: min–max of the runs."; got != want {
		t.Errorf("footer %q\nwant   %q", got, want)
	}
}
