package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

func TestPacketTableAndFailures(t *testing.T) {
	lan := results.Condition{Name: "lan", Label: "LAN (0 ms RTT, no loss)", ScpPayloadBytes: 64 << 20}
	s := func(tr, inst string, run int, v float64, extra map[string]float64) results.Sample {
		return results.Sample{Transport: tr, Condition: "lan", Instrument: inst, Run: run, Value: v, Extra: extra}
	}
	d := &results.Document{
		SchemaVersion: results.SchemaVersion,
		Env:           results.Env{Runs: 3, Harness: "twnsbench test"},
		Transports:    []results.Transport{{Name: "ssh", Label: "Pure SSH"}, {Name: "tw", Label: "SSH over Tunnel Whisperer"}},
		Conditions:    []results.Condition{lan},
		Samples: []results.Sample{
			s("ssh", instPing, 1, 0.061, map[string]float64{"min_ms": 0.031}),
			s("ssh", instPing, 2, 0.059, map[string]float64{"min_ms": 0.029}),
			s("ssh", instPing, 3, 0.070, map[string]float64{"min_ms": 0.040}),
			s("ssh", instUDP, 1, 221000, map[string]float64{"loss_pct": 2.4, "sent": 1000, "rcvbuf_errors": 20}),
			s("ssh", instUDP, 2, 210000, map[string]float64{"loss_pct": 2.0, "sent": 1000, "rcvbuf_errors": 10}),
			s("ssh", instUDP, 3, 230000, map[string]float64{"loss_pct": 3.0, "sent": 1000, "rcvbuf_errors": 30}),
			s("ssh", instReady, 1, 0.3, nil),
			s("tw", instReady, 1, 4.25, nil),
		},
		Skipped: []results.Skipped{
			{Transport: "tw", Condition: "lan", Instrument: instPing, Reason: "no ICMP path"},
			{Transport: "tw", Condition: "lan", Instrument: instUDP, Reason: "no UDP path"},
		},
		Failures: []results.Failure{{Transport: "ssh", Condition: "lan", Instrument: "scp", Run: 2, Error: "scp failed (exit status 1): boom"}},
	}
	md := string(Markdown(d))
	for _, want := range []string{
		"### Packet rate and latency — LAN (0 ms RTT, no loss)",
		"| Transport | ping avg / min (ms) | UDP 200 B (kpps received) | UDP loss (host drops) | time to ready (s) |",
		"| Pure SSH | 0.06 / 0.03 | 221.0 (210.0–230.0) | 2.4 % (2.0 %) | 0.30 |",
		"| SSH over Tunnel Whisperer | — | — | — | 4.25 |",
		"— not measurable: SSH over Tunnel Whisperer, ping: no ICMP path; SSH over Tunnel Whisperer, udp-pps: no UDP path.",
		"## Failed samples",
		"| Pure SSH | lan | scp | 2 | scp failed (exit status 1): boom |",
	} {
		if !strings.Contains(md, want+"\n") {
			t.Errorf("report lacks line %q\n%s", want, md)
		}
	}
	// Instrument-level skips do not skip the transport's results row.
	if strings.Contains(md, "| SSH over Tunnel Whisperer | skipped") {
		t.Errorf("an instrument skip skipped the whole row:\n%s", md)
	}
	// Without seed-001 samples there is no packet table.
	d.Samples = d.Samples[:0]
	if strings.Contains(string(Markdown(d)), "Packet rate") {
		t.Error("empty packet table rendered")
	}
}
