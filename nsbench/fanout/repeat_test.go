package fanout

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

type named struct {
	transport.Transport // nil: the sweep's loop calls only Name
	name                string
}

func (n named) Name() string { return n.name }

// --runs 3 over two transports and two counts: each run measures every
// transport at every count once before the next run begins; the first
// run's are the rows, the later ones their repeats in order, and the
// document on disk has them all.
func TestSweepRepeatsInterleaved(t *testing.T) {
	plan := Plan{Counts: []int{1, 2}, OutDir: t.TempDir(), Runs: 3}
	var calls []string
	doc := &results.Clients{Counts: plan.Counts}
	ts := []transport.Transport{named{name: "ssh"}, named{name: "wireguard"}}
	err := sweep(context.Background(), plan, ts, doc, func(tr transport.Transport, n int, _ string) results.ClientsRow {
		calls = append(calls, fmt.Sprintf("%s/%d", tr.Name(), n))
		return results.ClientsRow{Transport: tr.Name(), N: n, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{float64(len(calls))}}}
	}, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	once := []string{"ssh/1", "ssh/2", "wireguard/1", "wireguard/2"}
	if want := slices.Concat(once, once, once); !slices.Equal(calls, want) {
		t.Errorf("measured %v, want %v", calls, want)
	}
	saved, err := results.ReadClients(filepath.Join(plan.OutDir, results.ClientsFileName))
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Rows) != 4 {
		t.Fatalf("%d rows, want 4: %+v", len(saved.Rows), saved.Rows)
	}
	for i, r := range saved.Rows {
		var got []float64
		for _, s := range r.Sweeps() {
			got = append(got, s.PerClientMbps[0])
		}
		if want := []float64{float64(i + 1), float64(i + 5), float64(i + 9)}; r.Transport+"/"+fmt.Sprint(r.N) != once[i] || !slices.Equal(got, want) {
			t.Errorf("row %d: %s N=%d, sweeps measured as calls %v; want %s, calls %v", i, r.Transport, r.N, got, once[i], want)
		}
	}
}

// A sweep stopped in its second run keeps the first run whole and the
// repeats measured before it stopped.
func TestSweepRepeatsStopped(t *testing.T) {
	plan := Plan{Counts: []int{1, 2}, OutDir: t.TempDir(), Runs: 2}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	doc := &results.Clients{Counts: plan.Counts}
	calls := 0
	err := sweep(ctx, plan, []transport.Transport{named{name: "ssh"}}, doc, func(tr transport.Transport, n int, _ string) results.ClientsRow {
		if calls++; calls == 3 {
			cancel()
		}
		return results.ClientsRow{Transport: tr.Name(), N: n, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{1}}}
	}, t.Logf)
	if !errors.Is(err, context.Canceled) || calls != 3 || len(doc.Rows) != 2 || len(doc.Rows[0].Repeats) != 1 || len(doc.Rows[1].Repeats) != 0 {
		t.Errorf("err %v after %d measurements, rows %+v; want canceled after 3, N=1 repeated once, N=2 not", err, calls, doc.Rows)
	}
}

// Two builds side by side (Alternate), two counts, two runs: count by
// count, the builds in alternating order, the first count's turning from
// run to run; the rows stay by build, then count, each repeat on its own
// row.
func TestSweepAlternatesBuilds(t *testing.T) {
	plan := Plan{Counts: []int{1, 2}, OutDir: t.TempDir(), Runs: 2, Alternate: true}
	var calls []string
	doc := &results.Clients{Counts: plan.Counts}
	ts := []transport.Transport{named{name: "wireguard-go@a"}, named{name: "wireguard-go@b"}}
	err := sweep(context.Background(), plan, ts, doc, func(tr transport.Transport, n int, _ string) results.ClientsRow {
		calls = append(calls, fmt.Sprintf("%s/%d", tr.Name(), n))
		return results.ClientsRow{Transport: tr.Name(), N: n, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{float64(len(calls))}}}
	}, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"wireguard-go@a/1", "wireguard-go@b/1", "wireguard-go@b/2", "wireguard-go@a/2",
		"wireguard-go@b/1", "wireguard-go@a/1", "wireguard-go@a/2", "wireguard-go@b/2"}
	if !slices.Equal(calls, want) {
		t.Errorf("measured %v, want %v", calls, want)
	}
	// Each row with the calls that measured it: its first run's, then its repeat's.
	rows := map[string][]float64{"wireguard-go@a/1": {1, 6}, "wireguard-go@a/2": {4, 7}, "wireguard-go@b/1": {2, 5}, "wireguard-go@b/2": {3, 8}}
	order := []string{"wireguard-go@a/1", "wireguard-go@a/2", "wireguard-go@b/1", "wireguard-go@b/2"}
	if len(doc.Rows) != len(order) {
		t.Fatalf("%d rows, want %d", len(doc.Rows), len(order))
	}
	for i, r := range doc.Rows {
		var got []float64
		for _, s := range r.Sweeps() {
			got = append(got, s.PerClientMbps[0])
		}
		key := fmt.Sprintf("%s/%d", r.Transport, r.N)
		if key != order[i] || !slices.Equal(got, rows[key]) {
			t.Errorf("row %d: %s measured by calls %v; want %s by %v", i, key, got, order[i], rows[order[i]])
		}
	}
}

// Under the LAN and a WAN condition, two runs: each run measures every
// transport at every count under each condition, transport by transport;
// the rows are by transport, condition and count, each naming its
// condition, and each repeat lands on its own condition's row.
func TestSweepConditions(t *testing.T) {
	plan := Plan{Counts: []int{1, 2}, OutDir: t.TempDir(), Runs: 2, Conditions: []string{"", "wan"}}
	var calls []string
	doc := &results.Clients{Counts: plan.Counts}
	ts := []transport.Transport{named{name: "ssh"}, named{name: "wireguard"}}
	err := sweep(context.Background(), plan, ts, doc, func(tr transport.Transport, n int, cond string) results.ClientsRow {
		calls = append(calls, fmt.Sprintf("%s/%s/%d", tr.Name(), cond, n))
		return results.ClientsRow{Transport: tr.Name(), N: n, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{float64(len(calls))}}}
	}, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	once := []string{"ssh//1", "ssh//2", "ssh/wan/1", "ssh/wan/2", "wireguard//1", "wireguard//2", "wireguard/wan/1", "wireguard/wan/2"}
	if want := slices.Concat(once, once); !slices.Equal(calls, want) {
		t.Errorf("measured %v, want %v", calls, want)
	}
	if len(doc.Rows) != len(once) {
		t.Fatalf("%d rows, want %d", len(doc.Rows), len(once))
	}
	for i, r := range doc.Rows {
		var got []float64
		for _, s := range r.Sweeps() {
			got = append(got, s.PerClientMbps[0])
		}
		key := fmt.Sprintf("%s/%s/%d", r.Transport, r.Condition, r.N)
		if want := []float64{float64(i + 1), float64(i + 9)}; key != once[i] || !slices.Equal(got, want) || r.Repeats[0].Condition != r.Condition {
			t.Errorf("row %d: %s measured by calls %v (repeat under %q); want %s by %v", i, key, got, r.Repeats[0].Condition, once[i], want)
		}
	}
}
