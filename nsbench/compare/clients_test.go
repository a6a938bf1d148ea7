package compare

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

func eight(x float64) []float64 {
	xs := make([]float64, 8)
	for i := range xs {
		xs[i] = x + float64(i) // distinct: no ties
	}
	return xs
}

// Per transport and N both sweeps measured, one sweep a side: the
// aggregate (the sums) and fairness shown but not tested, a side with a
// client not measured marked as such; rows of one side only, or that
// failed, are left out.
func TestClientsRows(t *testing.T) {
	old := &results.Clients{Rows: []results.ClientsRow{
		{Transport: "ssh", N: 1, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{500}}},
		{Transport: "ssh", N: 8, ClientsWindow: results.ClientsWindow{PerClientMbps: eight(100)}},
		{Transport: "wireguard", N: 4, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{100, 100, 100, 100}}},
		{Transport: "wireguard", N: 8, Error: "handshake: timeout"},
	}}
	cur := &results.Clients{Rows: []results.ClientsRow{
		{Transport: "ssh", N: 1, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{600}}},
		{Transport: "ssh", N: 8, ClientsWindow: results.ClientsWindow{PerClientMbps: eight(200)}},
		{Transport: "ssh", N: 16, ClientsWindow: results.ClientsWindow{PerClientMbps: eight(200)}},
		{Transport: "wireguard", N: 4, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{100, 100, 100}, Failed: []string{"client4: stalled"}}},
		{Transport: "wireguard", N: 8, ClientsWindow: results.ClientsWindow{PerClientMbps: eight(1)}},
	}}
	rows := ClientsRows(old, cur)
	type want struct{ cond, metric, verdict string }
	wants := []want{
		{"N=1", "aggregate", notTested}, {"N=1", "fairness", notTested},
		{"N=8", "aggregate", notTested}, {"N=8", "fairness", notTested},
		{"N=4", "aggregate", notTested}, {"N=4", "fairness", notTested},
	}
	if len(rows) != len(wants) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(wants), rows)
	}
	for i, w := range wants {
		if r := rows[i]; r.Condition != w.cond || r.Metric != w.metric || r.Verdict() != w.verdict {
			t.Errorf("row %d: %s %s %q, want %s %s %q", i, r.Condition, r.Metric, r.Verdict(), w.cond, w.metric, w.verdict)
		}
	}
	// ssh at 8: sums 828 → 1628 (+96.6 %), one sweep a side: no p.
	if r := rows[2]; r.OldMedian != 828 || r.NewMedian != 1628 || math.Abs(r.ChangePct-(800.0/828*100)) > 1e-9 || !math.IsNaN(r.Q) || r.Untested != untestedOneSweep {
		t.Errorf("ssh N=8 aggregate: %v → %v (%+.2f %%, q %v, %q), want 828 → 1628, +96.6 %%, not tested", r.OldMedian, r.NewMedian, r.ChangePct, r.Q, r.Untested)
	}
	if r := rows[3]; r.Untested != untestedFairness || len(r.Old) != 1 || r.OldMedian >= r.NewMedian || r.OldMedian <= 0.999 || r.NewMedian >= 1 {
		t.Errorf("ssh N=8 fairness: %+v, want one index a side, 0.999 < old < new < 1", r)
	}
	if r := rows[4]; r.Untested != untestedMissing || r.NewMedian != 300 || !r.Bounds.New.MedianBound || !math.IsNaN(r.P) || !math.IsNaN(r.ChangePct) {
		t.Errorf("wireguard N=4 aggregate: %+v, want untested (a client not measured), new ≥ 300, no p, no change", r)
	}
	if r := rows[5]; !math.IsNaN(r.NewMedian) || r.Untested != untestedMissing {
		t.Errorf("wireguard N=4 fairness: %+v, want no new index, untested", r)
	}
	var b bytes.Buffer
	if err := WriteClients(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"≥ 300", "not tested (a client not measured n=1+1)", "1.00    —       n/a", "not tested (one index per side n=1+1)",
		"+96.6 %  not tested (one sweep per side: clients are not repeats n=1+1)", "adjusted for all 0 rows", "No row could be tested", "--runs 3 or more on both sides"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "lower bounds:") {
		t.Errorf("a sweep's output points at censored runs:\n%s", out)
	}
}

func TestClientsEnvDiffs(t *testing.T) {
	a := &results.Clients{Env: results.Env{Kernel: "6.1", CPUModel: "x", Cores: 2}, DurationSec: 10}
	b := *a
	if d := ClientsEnvDiffs(a, &b); len(d) != 0 {
		t.Errorf("same sweeps differ: %v", d)
	}
	b.DurationSec, b.Env.Kernel = 3, "6.2"
	if d := ClientsEnvDiffs(a, &b); len(d) != 2 || !strings.Contains(d[0], "kernel") || !strings.Contains(d[1], `duration "10s" vs "3s"`) {
		t.Errorf("diffs %v, want kernel and duration", d)
	}
	b = *a
	b.Env.WAN, b.Env.ImpairmentMethod = "20ms:0%", "userspace"
	if d := ClientsEnvDiffs(a, &b); len(d) != 2 || !strings.Contains(d[0], `wan "" vs "20ms:0%"`) || !strings.Contains(d[1], "impairment") {
		t.Errorf("diffs %v, want the WAN and its mechanism", d)
	}
}

func same(n int, x float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = x
	}
	return xs
}

// One sweep a side: the clients of a sweep are not repeats of it (drift
// between the sweeps moves them all together), so 10 × 100 against
// 10 × 95 Mbit/s has no p, however many clients agree.
func TestClientsRowsOneSweepNotTested(t *testing.T) {
	old := &results.Clients{Rows: []results.ClientsRow{{Transport: "ssh", N: 10, ClientsWindow: results.ClientsWindow{PerClientMbps: same(10, 100)}}}}
	cur := &results.Clients{Rows: []results.ClientsRow{{Transport: "ssh", N: 10, ClientsWindow: results.ClientsWindow{PerClientMbps: same(10, 95)}}}}
	rows := ClientsRows(old, cur)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want aggregate and fairness: %+v", len(rows), rows)
	}
	agg := rows[0]
	if agg.Metric != "aggregate" || agg.Significant || !math.IsNaN(agg.P) || !math.IsNaN(agg.Q) || agg.Verdict() != notTested || agg.Untested != untestedOneSweep {
		t.Errorf("aggregate: verdict %q, p %v, q %v, untested %q; want not tested (%s), no p", agg.Verdict(), agg.P, agg.Q, agg.Untested, untestedOneSweep)
	}
	if agg.OldMedian != 1000 || agg.NewMedian != 950 || math.Abs(agg.ChangePct+5) > 1e-9 || len(agg.Old) != 1 || len(agg.New) != 1 {
		t.Errorf("aggregate: %v → %v (%+.2f %%), %d+%d sweeps; want 1000 → 950, −5 %%, one sweep a side", agg.OldMedian, agg.NewMedian, agg.ChangePct, len(agg.Old), len(agg.New))
	}
	var b bytes.Buffer
	if err := WriteClients(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"-5.0 %  not tested (one sweep per side: clients are not repeats n=1+1)", "0 of 0"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "p=") || strings.Contains(out, "worse") {
		t.Errorf("output gives a p or a verdict:\n%s", out)
	}
}

// repeated is a sweep's row at n clients run once per aggregate in aggs,
// every client with an equal share.
func repeated(transport string, n int, aggs ...float64) results.ClientsRow {
	row := results.ClientsRow{Transport: transport, N: n, ClientsWindow: results.ClientsWindow{PerClientMbps: same(n, aggs[0]/float64(n))}}
	for _, a := range aggs[1:] {
		row.Repeats = append(row.Repeats, results.ClientsRow{Transport: transport, N: n, ClientsWindow: results.ClientsWindow{PerClientMbps: same(n, a/float64(n))}})
	}
	return row
}

// Five sweeps a side: the aggregate is tested over the five, a 20 %
// change is significant and none is not; fewer than three sweeps on a
// side is shown, not tested; a repeat that failed is no sweep.
func TestClientsRowsRepeatedSweeps(t *testing.T) {
	old := &results.Clients{Env: results.Env{Runs: 5}, Rows: []results.ClientsRow{
		repeated("ssh", 4, 1000, 1010, 990, 1005, 995),
		repeated("wireguard", 4, 1000, 1010, 990, 1005, 995),
		repeated("tw", 2, 500, 505, 495, 502, 498),
	}}
	cur := &results.Clients{Env: results.Env{Runs: 5}, Rows: []results.ClientsRow{
		repeated("ssh", 4, 1200, 1212, 1188, 1206, 1194),
		repeated("wireguard", 4, 1002, 1008, 992, 1003, 997),
		repeated("tw", 2, 600, 605, 595, 602, 598),
	}}
	// tw: the second repeat failed and the sweep stopped there: 600 and 605 measured.
	cur.Rows[2].Repeats[1].Error, cur.Rows[2].Repeats = "handshake: timeout", cur.Rows[2].Repeats[:2]
	rows := ClientsRows(old, cur)
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6: %+v", len(rows), rows)
	}
	if r := rows[0]; r.Metric != "aggregate" || len(r.Old) != 5 || len(r.New) != 5 || r.OldMedian != 1000 || r.NewMedian != 1200 ||
		!r.Significant || r.Verdict() != "+20.0 % better" {
		t.Errorf("ssh aggregate: %v → %v, n=%d+%d, p %v q %v, %q; want 1000 → 1200 over 5+5 sweeps, +20.0 %% better", r.OldMedian, r.NewMedian, len(r.Old), len(r.New), r.P, r.Q, r.Verdict())
	}
	if r := rows[2]; r.Significant || !(r.P > 0.5) || r.Verdict() != "~" || math.Abs(r.ChangePct-0.2) > 1e-9 {
		t.Errorf("wireguard aggregate: %+.2f %%, p %v, %q; want +0.2 %%, p > 0.5, ~", r.ChangePct, r.P, r.Verdict())
	}
	for _, i := range []int{1, 3} { // every client's share equal: fairness 1, tested, no change
		if r := rows[i]; r.Metric != "fairness" || r.Untested != "" || len(r.Old) != 5 || r.Significant || r.OldMedian != 1 {
			t.Errorf("row %d: %+v, want fairness tested over 5 sweeps, 1 → 1, ~", i, r)
		}
	}
	if r := rows[4]; len(r.New) != 2 || r.Untested != untestedFew || !math.IsNaN(r.P) || math.Abs(r.ChangePct-20.5) > 1e-9 {
		t.Errorf("tw aggregate: n=%d+%d, %q, p %v, %+.2f %%; want 5+2 sweeps, not tested (%s), +20.5 %% (602.5 against 500)", len(r.Old), len(r.New), r.Untested, r.P, r.ChangePct, untestedFew)
	}
	var b bytes.Buffer
	if err := WriteClients(&b, rows); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"+20.0 %  +20.0 % better (p=0.008 q=0.032 n=5+5)", "not tested (fewer than 3 sweeps a side n=5+2)",
		"adjusted for all 4 rows", "with 5+5 sweeps (the fewest here) the smallest possible p is 0.0079: enough."} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, b.String())
		}
	}
}

// A sweep on the LAN and under a WAN condition: each condition's row is
// compared with the same condition's, never with the other's.
func TestClientsRowsPerCondition(t *testing.T) {
	doc := func(lan, wan float64) *results.Clients {
		return &results.Clients{Rows: []results.ClientsRow{
			{Transport: "ssh", N: 2, ClientsWindow: results.ClientsWindow{PerClientMbps: same(2, lan)}},
			{Transport: "ssh", N: 2, Condition: "wan", ClientsWindow: results.ClientsWindow{PerClientMbps: same(2, wan)}},
		}}
	}
	rows := ClientsRows(doc(500, 100), doc(400, 110))
	if len(rows) != 4 {
		t.Fatalf("%d rows, want aggregate and fairness per condition: %+v", len(rows), rows)
	}
	for _, r := range []struct {
		row       Row
		cond      string
		old, curr float64
	}{{rows[0], "N=2", 1000, 800}, {rows[2], "wan N=2", 200, 220}} {
		if r.row.Metric != "aggregate" || r.row.Condition != r.cond || r.row.OldMedian != r.old || r.row.NewMedian != r.curr {
			t.Errorf("row %+v; want %s aggregate %v → %v", r.row, r.cond, r.old, r.curr)
		}
	}
}
