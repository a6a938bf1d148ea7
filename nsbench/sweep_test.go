package nsbench

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/fanout"
	"github.com/twnsbench/twnsbench/nsbench/residue"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

func requireSweepTools(t *testing.T) {
	t.Helper()
	nstest.RequireRoot(t)
	for _, p := range []string{"iperf3", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skip("needs " + p)
		}
	}
}

// sweep runs one transport at the given counts through Run, as `run
// --clients` does, and returns its document.
func sweep(t *testing.T, tr transport.Transport, d time.Duration, counts ...int) *results.Clients {
	t.Helper()
	o := SweepDefaults(counts)
	o.Duration, o.OutDir, o.Transports = d, t.TempDir(), []string{tr.Name()}
	plan, err := NewPlan(o, []string{tr.Name()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), plan, Deps{Transports: []transport.Transport{tr}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	doc := res.Clients
	if res.Doc != nil || doc == nil {
		t.Fatalf("a sweep's result: Doc %v, Clients %v; want the sweep's document only", res.Doc, doc)
	}
	if back, err := results.ReadClients(filepath.Join(plan.OutDir, results.ClientsFileName)); err != nil || len(back.Rows) != len(doc.Rows) {
		t.Fatalf("%s read back: %v, %d rows", results.ClientsFileName, err, len(back.Rows))
	}
	if len(doc.Skipped) > 0 {
		t.Fatalf("skipped: %+v", doc.Skipped)
	}
	if len(doc.Rows) != len(counts) {
		t.Fatalf("%d rows, want %d", len(doc.Rows), len(counts))
	}
	return doc
}

// checkRow: every client measured, a fairness index in (0, 1], the
// server's tunnel CPU counted, and teardown left nothing.
func checkRow(t *testing.T, r results.ClientsRow) {
	t.Helper()
	if r.Error != "" || len(r.Failed) > 0 {
		t.Fatalf("%s N=%d: error %q, failed %v", r.Transport, r.N, r.Error, r.Failed)
	}
	if len(r.PerClientMbps) != r.N {
		t.Errorf("%s N=%d: %d clients measured", r.Transport, r.N, len(r.PerClientMbps))
	}
	for i, x := range r.PerClientMbps {
		if !(x > 0) {
			t.Errorf("%s N=%d: client %d got %v Mbit/s", r.Transport, r.N, i+1, x)
		}
	}
	if j := stats.Jain(r.PerClientMbps); !(j > 0 && j <= 1) || math.IsNaN(j) {
		t.Errorf("%s N=%d: fairness %v, want in (0, 1]", r.Transport, r.N, j)
	}
	if r.Server == nil || !(r.Server.CPUSec > 0) {
		t.Errorf("%s N=%d: server cost %+v, want CPU-seconds > 0", r.Transport, r.N, r.Server)
	}
	if r.Timing == nil || !(r.Timing.SetupSec > 0) || len(r.Timing.Residue) > 0 {
		t.Errorf("%s N=%d: timing %+v, want a setup time and no residue", r.Transport, r.N, r.Timing)
	}
}

// Two clients, each its own SSH session to the one sshd, loaded at once.
func TestFanOutSSH(t *testing.T) {
	requireSweepTools(t)
	doc := sweep(t, transport.SSH{}, 2*time.Second, 2)
	checkRow(t, doc.Rows[0])
	r := doc.Rows[0]
	// Started together, the two 2 s streams share most of their time.
	if r.OverlapSec == nil || !(*r.OverlapSec >= 1 && *r.OverlapSec <= 2) {
		t.Fatalf("N=2: overlap %v, want 1 to 2 s", r.OverlapSec)
	}
	t.Logf("N=2: %v Mbit/s over the common %v s, setup %.1f s, teardown %.1f s, server %+v", r.PerClientMbps, *r.OverlapSec, r.Timing.SetupSec, r.Timing.TeardownSec, *r.Server)
}

// WireGuard (wireguard-go) with 1, 2 and 4 peers on one server device: a
// measurement, behind TWNSB_MEASURE.
func TestFanOutWireGuardMeasure(t *testing.T) {
	requireSweepTools(t)
	if os.Getenv("TWNSB_MEASURE") == "" {
		t.Skip("a measurement, not a test: set TWNSB_MEASURE=1 to run it")
	}
	w, err := transport.Build([]string{"wireguard-go"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := sweep(t, w[0], 5*time.Second, 1, 2, 4)
	for _, r := range doc.Rows {
		checkRow(t, r)
		t.Logf("N=%d: %v Mbit/s, fairness %.3f, setup %.1f s, server %+v", r.N, r.PerClientMbps, stats.Jain(r.PerClientMbps), r.Timing.SetupSec, *r.Server)
	}
}

// tw with 1 and 2 clients through one relay and one tw server: a
// measurement (provisioning alone takes ~20 s), behind TWNSB_MEASURE and
// the binaries' variables.
func TestFanOutTWMeasure(t *testing.T) {
	requireSweepTools(t)
	if os.Getenv("TWNSB_MEASURE") == "" {
		t.Skip("a measurement, not a test: set TWNSB_MEASURE=1 to run it")
	}
	values := map[string]string{}
	for opt, env := range map[string]string{"tw": "TWNSBENCH_TW", "caddy": "TWNSBENCH_CADDY", "xray": "TWNSBENCH_XRAY"} {
		if values[opt] = os.Getenv(env); values[opt] == "" {
			t.Skip("needs " + env + " (tw's binaries)")
		}
	}
	tw, err := transport.Build([]string{"tw"}, values)
	if err != nil {
		t.Fatal(err)
	}
	doc := sweep(t, tw[0], 3*time.Second, 1, 2)
	for _, r := range doc.Rows {
		checkRow(t, r)
		if r.Relay == nil || !(r.Relay.CPUSec > 0) {
			t.Errorf("N=%d: relay cost %+v, want CPU-seconds > 0", r.N, r.Relay)
		}
		t.Logf("N=%d: %v Mbit/s, setup %.1f s, server %+v, relay %+v", r.N, r.PerClientMbps, r.Timing.SetupSec, *r.Server, r.Relay)
	}
}

// A sweep's testbed whose harness died before its teardown is a run's
// leftover like any other: clean finds it by its name and owner, and
// removes it whole.
func TestCleanFindsSweepLeftovers(t *testing.T) {
	requireSweepTools(t)
	cfg := testbedConfig{OutDir: t.TempDir(), Network: Network{Congestion: "cubic"}, Clients: fanout.Shape{Clients: 2}}
	b, err := upClients(context.Background(), cfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	prefix := b.View().Prefix
	if len(residue.Find(prefix)) == 0 {
		t.Fatalf("%s: nothing found of a testbed that is up", prefix)
	}
	// The test binary is the run's owner: Leftovers counts its own runs.
	if left := Leftovers(); !slices.Contains(left, prefix) {
		t.Errorf("leftovers %v, want %s among them", left, prefix)
	}
	if _, err := cleanRun(context.Background(), prefix); err != nil {
		t.Error(err)
	}
	if left := residue.Find(prefix); len(left) > 0 {
		t.Errorf("after clean: %v", left)
	}
}

// Two builds swept 12 times: at one client B carries 20 % less, at two
// the same as A; one run of B at two clients measured nothing (no pair)
// and one measured one client of two (a lower bound). Each count gets its
// verdict on the aggregate over the runs.
func TestDecideSweepBuilds(t *testing.T) {
	row := func(name string, n int, mbps func(run int) []float64) results.ClientsRow {
		var runs []results.ClientsRow
		for r := range 12 {
			runs = append(runs, results.ClientsRow{Transport: name, N: n, ClientsWindow: results.ClientsWindow{PerClientMbps: mbps(r)}})
		}
		first := runs[0]
		first.Repeats = runs[1:]
		return first
	}
	wobble := func(r int) float64 { return float64(r%3) * 4 } // 0, 4, 8 Mbit/s
	doc := &results.Clients{Counts: []int{1, 2}, Rows: []results.ClientsRow{
		row("ssh@a", 1, func(r int) []float64 { return []float64{1000 + wobble(r)} }),
		row("ssh@a", 2, func(r int) []float64 { return []float64{500 + wobble(r), 500} }),
		row("ssh@b", 1, func(r int) []float64 { return []float64{800 + wobble(r)} }),
		row("ssh@b", 2, func(r int) []float64 { return []float64{500 + wobble(r), 500} }),
	}}
	doc.Rows[3].Repeats[4].PerClientMbps, doc.Rows[3].Repeats[4].Error = nil, "iperf3: refused"
	doc.Rows[3].Repeats[6].PerClientMbps = []float64{400}
	vs := decideSweepBuilds(doc, buildPairs([]string{"ssh@a", "ssh@b"}))
	if len(vs) != 2 {
		t.Fatalf("%d verdicts, want one per count: %+v", len(vs), vs)
	}
	one, two := vs[0], vs[1]
	if one.N != 1 || one.A != "ssh@a" || one.B != "ssh@b" || one.Transport != "ssh" || one.Verdict.Verdict != "slower" || one.Pairs != 12 {
		t.Errorf("N=1: %d %s/%s %s, %d pairs, %q; want ssh@b slower than ssh@a over 12 pairs", one.N, one.A, one.B, one.Transport, one.Pairs, one.Verdict.Verdict)
	}
	if one.Ratio == nil || *one.Ratio < 0.79 || *one.Ratio > 0.81 {
		t.Errorf("N=1: B/A %v, want 0.8", one.Ratio)
	}
	if two.N != 2 || two.Pairs+two.Censored != 11 || two.Verdict.Verdict == "slower" || two.Verdict.Verdict == "faster" {
		t.Errorf("N=2: %d pairs (%d censored), %q; want 11 runs paired (the failed one left out), no change called", two.Pairs, two.Censored, two.Verdict.Verdict)
	}
}
