package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// tunnelDoc: the plain row and two tunnels, two runs each, with what
// iperf3 moved, the host's CPU and the tunnels' own. Every sample has a
// transport CPU map, as documents before transport_cpu_absent did: the
// plain row's and the kernel tunnel's empty cgroups read 0.
func tunnelDoc() *results.Document {
	s := func(tr string, run int, gbps, hostCPU, ownCPU float64) results.Sample {
		moved := int64(gbps * 1e9 / 8 * 2) // 2 s at that rate
		x := results.Sample{Transport: tr, Condition: "lan", Instrument: instIperf1, Run: run, WallSec: 2, Value: gbps,
			HostCPUSec: hostCPU, MovedBytes: &moved}
		x.TransportCPUSec = map[string]float64{"client": ownCPU / 2, "server": ownCPU / 2}
		return x
	}
	return &results.Document{
		SchemaVersion: results.SchemaVersion,
		Env:           results.Env{Generated: "2026-12-01T00:00:00Z", Runs: 2, Harness: "twnsbench test"},
		Transports: []results.Transport{
			{Name: "ssh", Label: "Pure SSH", Plain: true},
			{Name: "openvpn-tls", Label: "SSH over OpenVPN (TLS, AES-256-GCM)"},
			{Name: "wireguard", Label: "SSH over WireGuard", InKernel: "kernel WireGuard"},
		},
		Conditions: []results.Condition{{Name: "lan", Label: "LAN (0 ms RTT, no loss)"}},
		Samples: []results.Sample{
			s("ssh", 1, 8, 3, 0), s("ssh", 2, 6, 3, 0), // median 7 Gbit/s; 3 CPU-s per 2 or 1.5 GB
			s("openvpn-tls", 1, 0.2, 2, 1.5), s("openvpn-tls", 2, 0.15, 2, 1.5), // 0.05 GB and 0.0375 GB moved
			s("wireguard", 1, 1.4, 2.8, 0), // one run: n=1
		},
	}
}

func TestTunnelComparison(t *testing.T) {
	md := string(Markdown(tunnelDoc()))
	for _, want := range []string{
		"## Tunnels compared — LAN (0 ms RTT, no loss)",
		"the Pure SSH row, whose iperf3 crosses no tunnel",
		"| Transport | iperf3 1 stream (Gbit/s) | MBytes/s | relative to plain | host CPU-s per GB | tunnel's own CPU-s per GB |",
		// 7 Gbit/s = 834 MiB/s; 3 CPU-s over 2 GB and 1.5 GB.
		"| Pure SSH (no tunnel: the baseline) | 7.00 (6.00–8.00) | 834 (715–954) | 1.000× | 1.75 (1.50–2.00) | — |",
		// 0.175 Gbit/s median: 0.025×; 2 CPU-s over 0.05 and 0.0375 GB; own 1.5 CPU-s.
		"| SSH over OpenVPN (TLS, AES-256-GCM) | 0.17 (0.15–0.20) | 21 (18–24) | 0.025× | 46.67 (40.00–53.33) | 35.00 (30.00–40.00) |",
		// A kernel tunnel: no own figure (its cgroups' 0 is not one), a dash and the footnote.
		"| SSH over WireGuard | 1.40 (1.40–1.40; n=1) | 167 (167–167; n=1) | 0.200× | 8.00 (8.00–8.00; n=1) | — ‡ |",
		"‡ In the kernel, not attributable per transport — see host CPU: the tunnel's work of SSH over WireGuard (kernel WireGuard) runs",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	// The derived metrics are the comparison's, not "More metrics" rows.
	if strings.Contains(md, "## More metrics") {
		t.Error("iperf3-1's CPU per GB repeated under More metrics")
	}
	// Neither the plain row nor the kernel tunnel has a cell of its own
	// CPU per GB (the metrics chart and compare draw from the cells).
	for _, c := range results.Cells(tunnelDoc()) {
		if c.Metric == results.TransportCPUPerGB && c.Transport != "openvpn-tls" {
			t.Errorf("%s has a %s cell (median %g): not attributable, it is no figure", c.Transport, c.Metric, c.Median)
		}
	}
	// Without a plain row, or without what iperf3 moved, no comparison.
	d := tunnelDoc()
	d.Transports[0].Plain = false
	if strings.Contains(string(Markdown(d)), "## Tunnels compared") {
		t.Error("comparison without a plain row")
	}
	d = tunnelDoc()
	for i := range d.Samples {
		d.Samples[i].MovedBytes = nil
	}
	if strings.Contains(string(Markdown(d)), "## Tunnels compared") {
		t.Error("comparison without moved bytes")
	}
}

// TestTunnelChartPanels: the comparison's pair of panels, the relative one
// drawn as a fraction of the plain row's median.
func TestTunnelChartPanels(t *testing.T) {
	svg := string(Chart(tunnelDoc(), Light))
	for _, want := range []string{`id="panel-lan-iperf3-1-relative"`, `id="panel-lan-iperf3-1-cpu-per-gb"`,
		"SSH over OpenVPN (TLS, AES-256-GCM): 0.025", "SSH over OpenVPN (TLS, AES-256-GCM): 46.67"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	d := tunnelDoc()
	d.Transports[0].Plain = false
	if strings.Contains(string(Chart(d, Light)), "panel-lan-iperf3-1-relative") {
		t.Error("relative panel without a plain row")
	}
}

// TestDriftRow: the Environment table's row of the host's probes, with
// the change between the two, or the one probe a run that stopped early
// has. One probe each has no interval: the row does not call the change
// drift, and says why.
func TestDriftRow(t *testing.T) {
	d := tunnelDoc()
	d.DriftProbes = []results.DriftProbe{{When: "start", Gbps: 4, WallSec: 2.01}, {When: "end", Gbps: 3, WallSec: 2.02}}
	md := string(Markdown(d))
	if !strings.Contains(md, "| Host before and after | plain iperf3, 1 stream, 2 s, no tunnel: 4.00 Gbit/s before the first transport, 3.00 after the last "+
		"(-25 %; one probe each, no interval: a change within the runs' own spread may be noise, not a drift of the host) |") {
		t.Errorf("no probes row:\n%s", md)
	}
	if strings.Contains(md, "Host drift") {
		t.Error("two single probes called drift")
	}
	d.DriftProbes = d.DriftProbes[:1]
	if md := string(Markdown(d)); !strings.Contains(md, "4.00 Gbit/s before the first transport (no probe after the last: the run stopped early)") {
		t.Error("a start-only probe is not said so")
	}
	d.DriftProbes = nil
	if strings.Contains(string(Markdown(d)), "Host before and after") {
		t.Error("probes row without probes")
	}
	d.Config = &results.RunConfig{Schedule: results.Schedule{Order: "interleaved", DriftProbe: new(bool)}}
	if md := string(Markdown(d)); !strings.Contains(md, "| Host before and after | not probed (--drift-probe=false) |") {
		t.Errorf("a run without probes is not said so:\n%s", md)
	}
}

// TestDriftText: a run asked not to probe says so and shows no figure,
// whatever probes the document holds; a run that probed (drift_probe
// absent or true) shows its figures, and none when it has none.
func TestDriftText(t *testing.T) {
	off, on := false, true
	both := []results.DriftProbe{{When: "start", Gbps: 2, WallSec: 1}, {When: "end", Gbps: 2.2, WallSec: 1}}
	for _, tc := range []struct {
		name   string
		cfg    *results.RunConfig
		probes []results.DriftProbe
		want   string
	}{
		{"off", &results.RunConfig{Schedule: results.Schedule{DriftProbe: &off}}, nil, "not probed (--drift-probe=false)"},
		{"off, probes anyway", &results.RunConfig{Schedule: results.Schedule{DriftProbe: &off}}, both, "not probed (--drift-probe=false)"},
		{"absent", &results.RunConfig{}, both, "plain iperf3, 1 stream, 1 s, no tunnel: 2.00 Gbit/s before the first transport, 2.20 after the last (+10 %"},
		{"on", &results.RunConfig{Schedule: results.Schedule{DriftProbe: &on}}, both[1:], "plain iperf3, 1 stream, 1 s, no tunnel: 2.20 Gbit/s after the last transport (the first probe failed)"},
		{"no config", nil, both[:1], "plain iperf3, 1 stream, 1 s, no tunnel: 2.00 Gbit/s before the first transport (no probe after the last"},
		{"probed, none", nil, nil, ""},
	} {
		got := driftText(tc.cfg, tc.probes)
		if !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
			t.Errorf("%s: %q, want %q…", tc.name, got, tc.want)
		}
	}
}

// TestOrderRow: the interleaved order's row says the order rotates within
// each run's round.
func TestOrderRow(t *testing.T) {
	d := tunnelDoc()
	d.Env.Order = "interleaved"
	md := string(Markdown(d))
	if !strings.Contains(md, "the transports' order rotates by one each run, so none is always measured first or always right after the same other one") {
		t.Errorf("the Order row does not say the order rotates:\n%s", md)
	}
}

// TestRelativeWhiskersSpanBothRows: a bar relative to the plain row
// divides by a measurement too, so its whisker spans both rows' spreads
// (the row's low end over plain's high end, its high over plain's low),
// not the row's spread over plain's median alone. Plain 6–8 Gbit/s
// (median 7), OpenVPN 0.15–0.2 (median 0.175): 0.025×, whisker
// 0.15/8–0.2/6 = 0.019–0.033 (over the median alone: 0.021–0.029); the
// plain row's own bar, 1×, spans 6/8–8/6.
func TestRelativeWhiskersSpanBothRows(t *testing.T) {
	svg := string(Chart(tunnelDoc(), Light))
	i := strings.Index(svg, `id="panel-lan-iperf3-1-relative"`)
	if i < 0 {
		t.Fatal("no relative panel")
	}
	texts := svg[i:]
	for _, want := range []string{
		"SSH over OpenVPN (TLS, AES-256-GCM): 0.025; min–max 0.019–0.033; n=2",
		"Pure SSH: 1.000; min–max 0.750–1.333; n=2",
		"whisker spans both rows",
	} {
		if !strings.Contains(texts, want) {
			t.Errorf("relative panel lacks %q", want)
		}
	}
}
