package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// many_rr's distribution table: per transport the median of the runs of
// each quantile (µs in, ms out), the tail's multiple of the median and
// the per-connection rates; a transport many_rr could not measure says
// why, a skipped one points to Skipped, and an old document without p90
// shows a dash, never a number it did not measure. The HTML page has the
// same table. A Results table none of whose instruments ran says so.
func TestManyRRDistribution(t *testing.T) {
	lan := results.Condition{Name: "lan", Label: "LAN"}
	p := func(x float64) *float64 { return &x }
	s := func(tr string, run int, v, p50, p90, p99, p999 float64) results.Sample {
		x := map[string]float64{"p999_us": p999, "per_conn_tps": v / 50, "min_conn_tps": v / 100}
		if p90 > 0 {
			x["p90_us"] = p90
		}
		return results.Sample{Transport: tr, Condition: "lan", Instrument: instManyRR, Run: run, Value: v, P50Us: p(p50), P99Us: p(p99), Extra: x}
	}
	d := &results.Document{
		SchemaVersion: results.SchemaVersion,
		Env:           results.Env{Runs: 3, Harness: "twnsbench test"},
		Transports: []results.Transport{{Name: "ssh", Label: "Pure SSH"}, {Name: "tw", Label: "tw"},
			{Name: "sshuttle", Label: "sshuttle"}, {Name: "old", Label: "old"}, {Name: "ipsec", Label: "ipsec"}},
		Conditions: []results.Condition{lan},
		Samples: []results.Sample{
			s("ssh", 1, 50000, 800, 1500, 5000, 9000), s("ssh", 2, 60000, 600, 1300, 5400, 8000), s("ssh", 3, 55000, 700, 1400, 5200, 8600),
			s("tw", 1, 7700, 5400, 12000, 46000, 81000),
			s("old", 1, 1000, 1000, 0, 2000, 3000),
		},
		Skipped: []results.Skipped{
			{Transport: "sshuttle", Condition: "lan", Instrument: instManyRR, Reason: "no such fixture"},
			{Transport: "ipsec", Reason: "no kernel XFRM"},
		},
	}
	md := string(Markdown(d))
	for _, want := range []string{
		"### Latency distribution, many connections at once (many_rr) — LAN",
		"| Transport | Transactions/s (total) | p50 (ms) | p90 (ms) | p99 (ms) | p99.9 (ms) | p99.9 / p50 | Per connection: mean / slowest (trans/s) |",
		"| Pure SSH | 55000 (50000–60000) | 0.70 | 1.40 | 5.20 | 8.60 | 12.3× | 1100 / 550 |",
		"| tw | 7700 (7700–7700; n=1) | 5.40 | 12.00 | 46.00 | 81.00 | 15.0× | 154 / 77 |",
		"| sshuttle | — | — | — | — | — | — | — |",
		"| old | 1000 (1000–1000; n=1) | 1.00 | — | 2.00 | 3.00 | 3.0× | 20 / 10 |",
		"| ipsec | " + skippedCell + " | — | — | — | — | — | — |",
		"— not measured: sshuttle: no such fixture.",
		"— not measured in this run: none of this table's instruments (iperf3, TCP_RR, scp) was asked for; the figures of those that were are in the tables below and under More metrics.",
	} {
		if !strings.Contains(md, want+"\n") {
			t.Errorf("report lacks line %q\n%s", want, md)
		}
	}
	if h := string(HTML(d)); !strings.Contains(h, "Latency distribution, many connections at once") || !strings.Contains(h, "12.3×") {
		t.Error("the HTML page lacks the many_rr table")
	}
	d.Samples = append(d.Samples[:0], results.Sample{Transport: "ssh", Condition: "lan", Instrument: instTCPRR, Run: 1, Value: 30000})
	if md := string(Markdown(d)); strings.Contains(md, "many_rr") || strings.Contains(md, "not measured in this run") {
		t.Errorf("a table without many_rr samples, or the note beside a measured Results table:\n%s", md)
	}
}

// TestManyRRCensoredTail: a run with a stalled connection holds a
// censored wait (its p99 and p99.9 lower bounds): the median of the runs
// it reaches reads "≥", as rrul's does, the tail's multiple with it, and
// the note says why; the p50 it lies above stays exact.
func TestManyRRCensoredTail(t *testing.T) {
	p := func(x float64) *float64 { return &x }
	at := results.AtLeastKey
	d := &results.Document{
		SchemaVersion: results.SchemaVersion,
		Env:           results.Env{Runs: 2, Harness: "twnsbench test"},
		Instruments: []results.Instrument{{Name: instManyRR, Metrics: []results.Metric{
			{Key: "value", Unit: "trans/s"},
			{Key: "p50_us", Unit: "µs", CensoredBy: at("p50_us")}, {Key: "p90_us", Unit: "µs", CensoredBy: at("p90_us")},
			{Key: "p99_us", Unit: "µs", CensoredBy: at("p99_us")}, {Key: "p999_us", Unit: "µs", CensoredBy: at("p999_us")}}}},
		Transports: []results.Transport{{Name: "ssh", Label: "Pure SSH"}},
		Conditions: []results.Condition{{Name: "lan", Label: "LAN"}},
		Samples: []results.Sample{
			{Transport: "ssh", Condition: "lan", Instrument: instManyRR, Run: 1, Value: 50000, P50Us: p(800), P99Us: p(5000),
				Extra: map[string]float64{"p90_us": 1500, "p999_us": 9000, "per_conn_tps": 1000, "min_conn_tps": 500}},
			{Transport: "ssh", Condition: "lan", Instrument: instManyRR, Run: 2, Value: 40000, P50Us: p(800), P99Us: p(1.2e6),
				Extra: map[string]float64{"p90_us": 1500, "p999_us": 1.2e6, "per_conn_tps": 800, "min_conn_tps": 0,
					"in_flight": 1, results.CensoredWaitMs: 1200, at("p99_us"): 1, at("p999_us"): 1}},
		},
	}
	md := string(Markdown(d))
	for _, want := range []string{
		"| Pure SSH | 45000 (40000–50000) | 0.80 | 1.50 | ≥ 602.50 | ≥ 604.50 | ≥ 755.6× | 900 / 250 |",
		"≥: a transaction was still unanswered a while after the test's end (censored",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q\n%s", want, md)
		}
	}
}
