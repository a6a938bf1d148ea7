package nsbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
)

// One pair of the RPM cross-check against the real goresponsiveness,
// only when $TWNSBENCH_GORESPONSIVENESS names it (it takes ~25 s:
// goresponsiveness measures 15 s more when its throughput is not
// stable): both clients report, its own figure is never above the
// draft's combination of its means (a harmonic against an arithmetic
// mean). TestMain checks that nothing is left behind.
func TestRPMCrossCheckAgainstGoResponsiveness(t *testing.T) {
	if os.Getenv(GoResponsivenessEnv) == "" {
		t.Skipf("set %s to goresponsiveness's networkQuality to run the cross-check (docs/instruments.md says how to build it)", GoResponsivenessEnv)
	}
	tool, why, err := FindGoResponsiveness()
	if tool == "" {
		t.Fatal(why, err)
	}
	res, err := SelfCheck(context.Background(), SelfCheckOptions{
		Duration: time.Second, OutDir: t.TempDir(), Logf: t.Logf, Instruments: []instrument.Instrument{},
		RPM: RPMCrossOptions{Tool: tool, Runs: 1, Connections: 2, Limit: 3 * time.Second},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.RPM == nil || len(res.RPM.Runs) != 1 {
		t.Fatalf("cross-check: %+v", res.RPM)
	}
	r := res.RPM.Runs[0]
	t.Logf("%+v", r)
	if r.Ours <= 0 || r.OursSelfMs <= 0 || r.OursForeignMs <= 0 || r.TheirsSelfMs <= 0 || r.TheirsForeignMs <= 0 || r.Theirs <= 0 {
		t.Errorf("a figure missing: %+v", r)
	}
	if r.Theirs > r.TheirsDraft+1 {
		t.Errorf("its own figure %g above the draft's %g from the same means", r.Theirs, r.TheirsDraft)
	}
}

// TestGoResponsivenessMustBeRoots: root runs the program
// $TWNSBENCH_GORESPONSIVENESS names, so one another user owns (uid 65534)
// is refused with the variable and the owner named; root's is taken.
func TestGoResponsivenessMustBeRoots(t *testing.T) {
	nstest.RequireRoot(t)
	tool := filepath.Join(t.TempDir(), "networkQuality")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(GoResponsivenessEnv, tool)
	if err := os.Chown(tool, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	path, why, err := FindGoResponsiveness()
	want := "$" + GoResponsivenessEnv + "=" + tool + " refused: " + tool + " is owned by uid 65534"
	if path != "" || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("another user's program: %q (%s), %v; want it refused with %q", path, why, err, want)
	}
	if err := os.Chown(tool, 0, 0); err != nil {
		t.Fatal(err)
	}
	if path, why, err := FindGoResponsiveness(); path != tool || err != nil {
		t.Errorf("root's program: %q (%s), %v; want %s", path, why, err, tool)
	}
}
