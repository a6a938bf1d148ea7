package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestBelowRateSamplesListed: an iperf3-cost sample whose goodput fell
// short of its offered rate is listed with both, its cost is in no cell
// (the median is the other runs' 2 CPU-s/GB, not 3 with its 6), and its
// goodput stays in the goodput cell.
func TestBelowRateSamplesListed(t *testing.T) {
	d := &results.Document{
		SchemaVersion: results.SchemaVersion,
		Env:           results.Env{Runs: 3, Harness: "twnsbench test"},
		Transports:    []results.Transport{{Name: "wireguard-go", Label: "WireGuard (wireguard-go)"}},
		Conditions:    []results.Condition{{Name: "lan", Label: "LAN (0 ms RTT, no loss)"}},
		Instruments: []results.Instrument{{Name: "iperf3-cost", Metrics: []results.Metric{
			{Key: "value", Label: "goodput at an offered 200 Mbit/s", Unit: "Gbit/s", Better: results.BetterHigher},
			{Key: results.CostCPUPerGB, Label: "tunnel's own CPU per GB at an offered 200 Mbit/s", Unit: "CPU-s/GB", Better: results.BetterLower}}}},
	}
	for i, c := range []struct{ gbps, cpu float64 }{{0.2, 0.25}, {0.1, 0.375}, {0.2, 0.25}} {
		moved := int64(c.gbps * 1e9 / 8 * 5)
		s := results.Sample{Transport: "wireguard-go", Condition: "lan", Instrument: "iperf3-cost", Run: i + 1, Value: c.gbps, Unit: "Gbit/s",
			MovedBytes: &moved, TransportCPUSec: map[string]float64{"client": c.cpu}, Extra: map[string]float64{results.OfferedGbps: 0.2}}
		if c.gbps < 0.19 {
			s.Extra[results.BelowOfferedRate] = c.gbps / 0.2
		}
		d.Samples = append(d.Samples, s)
	}
	_, values := d.MetricValues()
	costKey := results.CellKey{Transport: "wireguard-go", Condition: "lan", Instrument: "iperf3-cost", Metric: results.CostCPUPerGB}
	if got := values[costKey]; len(got) != 2 || got[0] != 2 || got[1] != 2 {
		t.Errorf("cost readings %v, want the two runs at the rate (2, 2)", got)
	}
	if got := values[results.CellKey{Transport: "wireguard-go", Condition: "lan", Instrument: "iperf3-cost", Metric: "value"}]; len(got) != 3 {
		t.Errorf("goodput readings %v, want all three", got)
	}
	md := string(Markdown(d))
	for _, want := range []string{
		"## Below the offered rate",
		"| WireGuard (wireguard-go) | lan | iperf3-cost | 2 | 0.2 Gbit/s | 0.1 Gbit/s |",
	} {
		if !strings.Contains(md, want+"\n") {
			t.Errorf("report lacks line %q\n%s", want, md)
		}
	}
	if strings.Contains(md, "| iperf3-cost | 1 |") {
		t.Errorf("a sample at its rate listed as below it:\n%s", md)
	}
}
