package nsbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// The known slowdown's caps: A's path at capA, B's 20 % below it, both
// well under what wireguard-go carries on this kind of host (0.15 Gbit/s
// and more in a loaded test run), so each pair's ratio is the caps' and
// not the host's noise.
const (
	capA           = 80e6
	capB           = capA * 8 / 10
	slowdownRounds = 12 // the fewest pairs that can call a cell slower (verdict.ConfirmPairs twice)
)

// Two builds of one real wireguard-go, B's path capped 20 % below A's: one
// run of 12 ABBA rounds calls iperf3-1 slower, with B/A and its interval
// around 0.8, and the run's outcome is a regression. The cap is set from
// the run's own progress hook, before each sample: A's turn gets capA on
// the client's and the server's eth0, B's turn capB (tbf, as selfcheck's).
func TestBuildsKnownSlowdown(t *testing.T) {
	nstest.RequireRoot(t)
	wgGo := filepath.Join(t.TempDir(), "wireguard-go")
	if out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", wgGo, "golang.zx2c4.com/wireguard").CombinedOutput(); err != nil {
		t.Fatalf("go build wireguard-go: %v\n%s", err, out)
	}
	o := Quick()
	o.Transports = []string{"wireguard-go@a", "wireguard-go@b"}
	o.Runs, o.Duration, o.Warmup = slowdownRounds, time.Second, 0
	o.DriftProbe = false
	o.WAN = []string{"off"}
	o.Builds.MaxRounds = slowdownRounds
	failOn, err := ParseFailOn("iperf3-1")
	if err != nil {
		t.Fatal(err)
	}
	o.Builds.FailOn = failOn
	o.OutDir = t.TempDir()
	plan, err := NewPlan(o, transport.Names())
	if err != nil {
		t.Fatal(err)
	}
	var defs []transport.BuildDef
	for _, b := range []string{"a:wireguard-go=" + wgGo, "b:wireguard-go=" + wgGo} {
		d, err := transport.ParseBuild(b)
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, d)
	}
	ts, err := transport.BuildWith(o.Transports, nil, defs)
	if err != nil {
		t.Fatal(err)
	}
	ins, _, err := instrument.Select([]string{"iperf3-1"})
	if err != nil {
		t.Fatal(err)
	}
	var capErr error
	capped := map[string]int{}
	status := func(s Status) {
		bps := uint64(capA)
		if s.Transport == "wireguard-go@b" {
			bps = capB
		}
		if err := capPath(o.OutDir, bps); err != nil {
			capErr = errors.Join(capErr, fmt.Errorf("%s round %d: %w", s.Transport, s.Run.Run, err))
			return
		}
		capped[s.Transport]++
	}
	res, err := Run(context.Background(), plan, Deps{Transports: ts, Instruments: ins, Logf: t.Logf, Status: status})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if capErr != nil || capped["wireguard-go@a"] != slowdownRounds || capped["wireguard-go@b"] != slowdownRounds {
		t.Fatalf("caps set %v, want %d per build: %v", capped, slowdownRounds, capErr)
	}
	v := res.Doc.Verdicts
	if v == nil {
		t.Fatal("no verdicts")
	}
	found := false
	for _, c := range v.Cells {
		if c.Instrument != "iperf3-1" || c.Metric != "value" {
			continue
		}
		found = true
		e := c.Estimate
		t.Logf("iperf3-1: %s, B/A %v [%v, %v], %d pairs, q %v (%s)", c.Verdict, deref(e.Ratio), deref(e.Lo), deref(e.Hi), c.Pairs, deref(e.Q), c.Reason)
		if c.Verdict != "slower" || !c.Counts || c.Pairs != slowdownRounds {
			t.Errorf("iperf3-1: %s (counts %v) over %d pairs, want slower over %d", c.Verdict, c.Counts, c.Pairs, slowdownRounds)
		}
		if e.Ratio == nil || e.Lo == nil || e.Hi == nil || *e.Lo < 0.7 || *e.Hi > 0.9 || *e.Ratio < *e.Lo || *e.Ratio > *e.Hi {
			t.Errorf("iperf3-1: B/A %v in [%v, %v], want an interval within 0.7–0.9 around the caps' 0.8", deref(e.Ratio), deref(e.Lo), deref(e.Hi))
		}
	}
	if !found {
		t.Fatalf("no iperf3-1 verdict among %+v", v.Cells)
	}
	if out, ok := VerdictOutcome(res.Doc); !ok || len(out.Regressed) != 1 {
		t.Errorf("outcome %+v: want iperf3-1 regressed", out)
	}
	if left := nstest.Residue(res.Prefix); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// capPath caps the eth0 of the run's client and server namespaces at bps
// (tbfCap), the run found by its log directory under out.
func capPath(out string, bps uint64) error {
	logs, err := os.ReadDir(filepath.Join(out, "logs"))
	if err != nil || len(logs) != 1 {
		return fmt.Errorf("run prefix from %s/logs: %v (%d entries)", out, err, len(logs))
	}
	for _, r := range []string{topology.Client, topology.Server} {
		if err := capRole(logs[0].Name()+"-"+r, bps); err != nil {
			return err
		}
	}
	return nil
}

func capRole(name string, bps uint64) error {
	n, err := ns.Open(name)
	if err != nil {
		return err
	}
	defer n.Close()
	h, err := n.Netlink()
	if err != nil {
		return err
	}
	defer h.Close()
	link, err := h.LinkByName(topology.RoleLink)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := h.QdiscReplace(tbfCap(link.Attrs().Index, bps)); err != nil {
		return fmt.Errorf("%s: cap at %d bit/s: %w", name, bps, err)
	}
	return nil
}
