package nsbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/twnsbench/twnsbench/nsbench/wan"
)

// A quick Pure SSH run of the reference's instruments with its WAN condition through the
// userspace impairment: the WAN cell's TCP_RR shows the emulated RTT, the
// verification measured it, and nothing is left behind.
func TestWANQuickRunUserspace(t *testing.T) {
	nstest.RequireRoot(t)
	o := Quick()
	o.Transports = []string{"ssh"}
	o.WAN = []string{"30ms:0.1%"}
	o.DriftProbe = false
	o.Impairment = ImpairmentUserspace
	o.SizeBytes = 16 << 20 // the WAN scp copies it at the loss-bound ~2 MB/s
	o.OutDir = t.TempDir()
	seed := uint64(42)
	o.Seed = &seed
	plan, err := NewPlan(o, []string{"ssh"})
	if err != nil {
		t.Fatal(err)
	}
	// The reference's four instruments: the WAN's figures this test reads
	// are theirs (seed 001's and the rrul have their own tests).
	ins, _, err := instrument.Select([]string{"iperf3-1", "iperf3-4", "tcp_rr", "scp"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), plan, Deps{
		Transports:  []transport.Transport{transport.SSH{}},
		Instruments: ins,
		Logf:        t.Logf,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	d := res.Doc

	if d.Env.ImpairmentMethod != impair.MethodUserspace || d.Env.WANSeed == nil || *d.Env.WANSeed != 42 ||
		!strings.Contains(d.Env.Impairment, "forwarder") {
		t.Errorf("env: method %q seed %v impairment %q", d.Env.ImpairmentMethod, d.Env.WANSeed, d.Env.Impairment)
	}
	var rr *results.Sample
	for i, s := range d.Samples {
		if s.Instrument == "scp" {
			// The WAN's connection is TCP's, the key exchange's and the
			// authentication's round trips: at least 3 of 30 ms.
			connect, transfer := s.Extra[results.ScpConnectSec], s.Extra[results.ScpTransferSec]
			t.Logf("%s scp: ssh_connect_sec %.3f, transfer_sec %.3f, wall %.3f s: %.2f MB/s (%.2f over the whole wall)",
				s.Condition, connect, transfer, s.WallSec, s.Value, float64(*s.PayloadBytes)/s.WallSec/1e6)
			if connect <= 0 || transfer <= 0 || s.Condition == "wan" && connect < 0.09 {
				t.Errorf("%s scp: connect %v s, transfer %v s: want both > 0, and ≥ 3 RTTs on the WAN", s.Condition, connect, transfer)
			}
		}
		if s.Condition == "wan" && s.Instrument == "tcp_rr" {
			rr = &d.Samples[i]
		}
		if s.Condition == "wan" && s.RoleCPUSec[wan.ImpairCgroup] <= 0 {
			t.Errorf("wan %s: no forwarder CPU recorded (%v)", s.Instrument, s.RoleCPUSec)
		}
	}
	if rr == nil || rr.P50Us == nil {
		t.Fatalf("no WAN TCP_RR sample with a p50 (failures: %+v)", d.Failures)
	}
	if *rr.P50Us < 29000 || *rr.P50Us > 33000 {
		t.Errorf("WAN TCP_RR p50 = %.0f µs, want 29000–33000", *rr.P50Us)
	}
	if len(d.Verification) != 1 {
		t.Fatalf("verification: %+v", d.Verification)
	}
	v := d.Verification[0]
	t.Logf("verification: %+v (measured RTT %v ms, loss %v %%)", v, deref(v.MeasuredRTTMs), deref(v.MeasuredLossPct))
	if v.MeasuredRTTMs == nil || *v.MeasuredRTTMs < 29 || *v.MeasuredRTTMs > 31 || v.Packets == 0 {
		t.Errorf("verification measured RTT %v ms over %d packets, want within 1 ms of 30", deref(v.MeasuredRTTMs), v.Packets)
	}
	// The loss figure is the end-to-end count's: 16 000 datagrams each
	// way (the echoes: those that arrived), its interval holding the
	// configured 0.1 %; or, when that count was not usable, the
	// impairment's loss draws over the probe, and the note says so.
	if v.LossFallback != "" && !strings.Contains(v.Note, "not end to end: "+v.LossFallback) {
		t.Errorf("fallback %q not named in the note %q", v.LossFallback, v.Note)
	}
	held, chance := nstest.LossHolds(v)
	if chance != "" {
		t.Log(chance)
	}
	if v.LossProbeDatagrams < 31000 || v.MeasuredLossPct == nil || !held || v.CounterLossPct == nil {
		t.Errorf("verification's loss is not the end-to-end count: %d datagrams, %v %% (%v–%v %%), counters %v %%",
			v.LossProbeDatagrams, deref(v.MeasuredLossPct), deref(v.LossLowPct), deref(v.LossHighPct), deref(v.CounterLossPct))
	}
	if ok, chance := nstest.WANVerified(v); !ok || res.Unverified != 0 && chance == "" {
		t.Errorf("verification not ok: %+v", v)
	}
	var diags int
	for _, g := range d.Diagnostics {
		if g.Condition == "wan" && strings.Contains(g.Output, "drop ratio") {
			diags++
		}
	}
	if diags != 2 {
		t.Errorf("want the client's and the server's impairment counters as diagnostics, got %d: %+v", diags, d.Diagnostics)
	}
	md, err := os.ReadFile(filepath.Join(o.OutDir, ReportFile))
	if err != nil || !strings.Contains(string(md), "## Verification") || !strings.Contains(string(md), "## Results — WAN (30 ms RTT, 0.1 % loss)") {
		t.Errorf("report lacks the WAN table or the Verification section (%v)", err)
	}

	// Nothing left: namespaces, /etc/netns, the forwarder and every other
	// process, its socket, mounts, the run's cgroups and private directory.
	if left := nstest.Residue(res.Prefix); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func deref(x *float64) any {
	if x == nil {
		return nil
	}
	return *x
}
