package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// An instrument whose every metric is under More metrics (iperf3-instr)
// says there why it could not measure a path, as the fixed tables say
// theirs beside them; its measured path's cell and method are there too.
func TestMoreMetricsSaysNotApplicable(t *testing.T) {
	instr := results.Instrument{Name: "iperf3-instr", Tool: "iperf3", Metrics: []results.Metric{
		{Key: "value", Label: "tunnel's packet-path instructions per byte sent", Unit: "instr/B", Better: results.BetterLower}}}
	doc := &results.Document{
		SchemaVersion: results.SchemaVersion,
		Env:           results.Env{Generated: "2026-12-01T00:00:00Z", Runs: 1, Harness: "twnsbench test"},
		Transports:    []results.Transport{{Name: "wireguard-go", Label: "SSH over WireGuard (wireguard-go)"}, {Name: "ssh-tun", Label: "SSH tunnel"}},
		Conditions:    []results.Condition{{Name: "lan", Label: "LAN"}},
		Instruments:   []results.Instrument{instr},
		Samples: []results.Sample{{Transport: "wireguard-go", Condition: "lan", Instrument: "iperf3-instr", Run: 1, WallSec: 4, Value: 8.22,
			Method: "valgrind's callgrind"}},
		Skipped: []results.Skipped{{Transport: "ssh-tun", Condition: "lan", Instrument: "iperf3-instr",
			Reason: "not applicable: the tunnel has no user-space daemon counted under valgrind"}},
	}
	md := string(Markdown(doc))
	for _, want := range []string{
		"| lan | SSH over WireGuard (wireguard-go) | iperf3-instr | tunnel's packet-path instructions per byte sent (instr/B) | 8.22 (8.22–8.22) | lower |",
		"| lan | SSH tunnel | iperf3-instr | every metric | — (not applicable: the tunnel has no user-space daemon counted under valgrind) |  |",
		"- iperf3-instr on SSH over WireGuard (wireguard-go): valgrind's callgrind.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
