package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestExcludedRPMSamplesListed: an rpm sample that never converged is
// listed under "Samples kept out" with its figure, and the cell's median
// is the converged runs' (1000, 1100), not the four runs' 3050.
func TestExcludedRPMSamplesListed(t *testing.T) {
	d := &results.Document{
		SchemaVersion: results.SchemaVersion,
		Env:           results.Env{Runs: 4, Harness: "twnsbench test"},
		Transports:    []results.Transport{{Name: "ssh", Label: "Pure SSH"}},
		Conditions:    []results.Condition{{Name: "lan", Label: "LAN (0 ms RTT, no loss)"}},
		Instruments: []results.Instrument{{Name: "rpm", Metrics: []results.Metric{
			{Key: "value", Label: "responsiveness under working conditions (RPM, trimmed means)", Unit: "RPM", Better: results.BetterHigher}}}},
	}
	for i, v := range []float64{1000, 5000, 1100, 6000} {
		s := results.Sample{Transport: "ssh", Condition: "lan", Instrument: "rpm", Run: i + 1, Value: v, Unit: "RPM"}
		if v > 2000 {
			s.Extra = map[string]float64{results.NotConverged: 1}
		}
		d.Samples = append(d.Samples, s)
	}
	md := string(Markdown(d))
	for _, want := range []string{
		"## Samples kept out",
		"| Pure SSH | lan | rpm | 2 | not converged | 5000 RPM |",
		"| Pure SSH | lan | rpm | 4 | not converged | 6000 RPM |",
	} {
		if !strings.Contains(md, want+"\n") {
			t.Errorf("report lacks line %q\n%s", want, md)
		}
	}
	if strings.Contains(md, "| Pure SSH | lan | rpm | 1 |") || !strings.Contains(md, "1050") || strings.Contains(md, "3050") {
		t.Errorf("a converged run listed as kept out, or the median not the converged runs' 1050:\n%s", md)
	}
}
