package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/profile"
	"github.com/twnsbench/twnsbench/nsbench/report"
)

// TestBuildsProfile profiles a short A/A of a real wireguard-go (1 round
// of one 1 s iperf3-1 sample) with perf: the verdicts carry one
// comparison over the round, each build's folded stacks are in the
// output directory and hold wireguard-go's own Go functions, named from
// its symbol table, and the report draws the flame graph.
func TestBuildsProfile(t *testing.T) {
	nstest.RequireRoot(t)
	if _, err := profile.Find(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	wgGo := buildWireGuardGo(t)
	out := t.TempDir()
	start := time.Now()
	doc, code, _, stderr := runTwoBuilds(t, out, [2]string{"a", "b"}, [2]string{wgGo, wgGo}, "--profile",
		"--instruments", "iperf3-1", "--duration", "1s", "--warmup", "0", "--runs", "1", "--max-rounds", "1")
	t.Logf("run took %v, exit %d", time.Since(start).Round(time.Millisecond), code)
	if doc.Verdicts == nil || doc.Verdicts.CPUProfile == nil || len(doc.Verdicts.CPUProfile.Comparisons) != 1 {
		t.Fatalf("verdicts %+v: want one profile comparison\nstderr: %s", doc.Verdicts, stderr)
	}
	d := doc.Verdicts.CPUProfile.Comparisons[0]
	if d.Transport != "wireguard-go" || d.Condition != "lan" || d.Rounds != 1 || d.A.Row != "wireguard-go@a" || d.B.Row != "wireguard-go@b" ||
		d.A.Samples <= 0 || d.B.Samples <= 0 || len(d.Functions) == 0 || d.Flame == nil {
		t.Fatalf("comparison %+v: want wireguard-go under lan over its round with samples of both builds", d)
	}
	for _, f := range []string{d.A.Folded, d.B.Folded} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		goFrames := 0
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "wireguard-go;") && strings.Contains(line, ";golang.zx2c4.com/wireguard/device.") {
				goFrames++
			}
		}
		if goFrames == 0 {
			t.Errorf("%s: no stack of wireguard-go through its device package:\n%.2000s", f, b)
		}
	}
	if _, err := os.Stat(filepath.Join(out, report.ProfileFile)); err != nil {
		t.Errorf("no flame graph: %v", err)
	}
	// Every perf this run started has ended: none names the run's cgroup.
	prefix := regexp.MustCompile(`twnsb-[0-9a-f]+`).FindString(doc.Env.Topology)
	if prefix == "" {
		t.Fatalf("no run prefix in %q", doc.Env.Topology)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "perf") && strings.Contains(string(b), prefix) {
			t.Errorf("a perf of the run is still running: %s %q", p, b)
		}
	}
}
