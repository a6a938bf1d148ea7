package nsbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// Pure SSH with 1 and 2 clients under a 20 ms WAN (the LAN's rows left
// out: they are TestFanOutSSH's): every client sees the WAN's RTT to the
// server, the condition is verified as a run's, and nothing is left
// behind.
func TestSweepUnderWAN(t *testing.T) {
	requireSweepTools(t)
	sweepWANOnly = true
	t.Cleanup(func() { sweepWANOnly = false })
	o := SweepDefaults([]int{1, 2})
	o.Duration, o.OutDir, o.Transports, o.WAN = 2*time.Second, t.TempDir(), []string{"ssh"}, []string{"20ms:0%"}
	plan, err := NewPlan(o, []string{"ssh"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	res, err := Run(context.Background(), plan, Deps{Transports: []transport.Transport{transport.SSH{}}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("swept in %.1f s", time.Since(t0).Seconds())
	doc := res.Clients
	if len(doc.Conditions) != 1 || doc.Conditions[0].Name != "wan" || doc.Env.ImpairmentMethod == "" || doc.Env.Impairment == "" || doc.Env.WAN != "20ms:0%" {
		t.Errorf("conditions %+v, env wan %q, method %q, impairment %q", doc.Conditions, doc.Env.WAN, doc.Env.ImpairmentMethod, doc.Env.Impairment)
	}
	want := []string{"wan/1", "wan/2"}
	if len(doc.Rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(doc.Rows), len(want), doc.Rows)
	}
	for i, r := range doc.Rows {
		if got := r.Condition + "/" + string(rune('0'+r.N)); got != want[i] {
			t.Errorf("row %d is %s, want %s", i, got, want[i])
		}
		checkRow(t, r)
		if r.WAN == nil {
			t.Fatalf("WAN N=%d: no WAN record", r.N)
		}
		if len(r.WAN.ClientRTTMs) != r.N {
			t.Fatalf("WAN N=%d: %d clients' RTTs", r.N, len(r.WAN.ClientRTTMs))
		}
		// The emulation adds delay, never takes it away; the forwarder's
		// timers and this busy host add a little.
		for k, ms := range r.WAN.ClientRTTMs {
			if ms == nil || *ms < 19.5 || *ms > 23 {
				t.Errorf("WAN N=%d: client %d RTT %v ms, want 20 ms (19.5 to 23)", r.N, k+1, ms)
			}
		}
		v := r.WAN.Verification
		if ok, how := nstest.WANVerified(v); !ok || v.ConfiguredRTTMs != 20 || v.Transport != "ssh" {
			t.Errorf("WAN N=%d: verification %+v", r.N, v)
		} else if how != "" {
			t.Log(how)
		}
		t.Logf("WAN N=%d: clients' RTT %v ms, %v Mbit/s", r.N, derefAll(r.WAN.ClientRTTMs), r.PerClientMbps)
	}
	md, err := os.ReadFile(filepath.Join(plan.OutDir, report.ClientsReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"measured under WAN (20 ms RTT, no loss)", ", WAN (20 ms RTT, no loss)\n", "## Verification", "Impairment: "} {
		if !strings.Contains(string(md), s) {
			t.Errorf("%s lacks %q:\n%s", report.ClientsReportFile, s, md)
		}
	}
	if back, err := results.ReadClients(filepath.Join(plan.OutDir, results.ClientsFileName)); err != nil || back.Rows[1].WAN == nil {
		t.Errorf("read back: %v", err)
	}
}

func derefAll(xs []*float64) []float64 {
	var out []float64
	for _, x := range xs {
		if x != nil {
			out = append(out, *x)
		}
	}
	return out
}
