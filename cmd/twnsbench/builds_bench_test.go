package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// BenchmarkBuildsAB is the speed of a verdict: an A/B
// of one transport — two builds of one real wireguard-go, so the truth is
// "no change" — with iperf3-1, tcp_rr and a small scp, at most 20 rounds.
// It reports the run's wall time, the rounds measured, how many of the
// three cells were decided, and each cell's smallest detectable change
// (the verdict's MDE, %). Not part of make test (it takes minutes):
//
//	sudo go test -run '^$' -bench BuildsAB -benchtime 1x ./cmd/twnsbench
func BenchmarkBuildsAB(b *testing.B) {
	nstest.RequireRoot(b)
	wgGo := buildWireGuardGo(b)
	for i := 0; i < b.N; i++ {
		out := b.TempDir()
		start := time.Now()
		doc, code, _, stderr := runTwoBuilds(b, out, [2]string{"a", "b"}, [2]string{wgGo, wgGo},
			"--instruments", "iperf3-1,tcp_rr,scp", "--size", "16MiB", "--duration", "5s", "--warmup", "1s", "--max-rounds", "20")
		wall := time.Since(start)
		if doc.Verdicts == nil {
			b.Fatalf("exit %d, no verdicts\n%s", code, stderr)
		}
		decided, rounds := 0, 0
		for _, c := range doc.Verdicts.Cells {
			if c.Metric != "value" {
				continue
			}
			rounds = max(rounds, c.Pairs)
			if c.Verdict != "undecided" {
				decided++
			}
			if c.Verdict == "slower" {
				b.Errorf("A/A: %s is slower", c.Instrument)
			}
			if mde := c.Estimate.MDE; mde != nil {
				b.ReportMetric(100**mde, "mde-%-"+strings.ReplaceAll(c.Instrument, "_", "-"))
			}
			b.Logf("%s: %s over %d pairs (%s)", c.Instrument, c.Verdict, c.Pairs, c.Reason)
		}
		b.ReportMetric(wall.Seconds(), "s/verdict")
		b.ReportMetric(float64(rounds), "rounds")
		b.ReportMetric(float64(decided), "decided-of-3")
	}
}

// BenchmarkBuildsCost is the cost cells' verdict: wireguard-go as A and,
// as B, the program $TWNSBENCH_COSTLY_WG names (one built with a known
// extra cost, e.g. a fixed spin per packet sent; A is then
// $TWNSBENCH_PLAIN_WG, the same source without the spin, when set), or
// the same program again (A/A) when it is unset. iperf3-1, tcp_rr and
// iperf3-cost, 5 s samples, up to 20 rounds. It reports each cell's
// smallest detectable change and B/A (%), and fails when an A/A calls a
// cost cell slower, or a costly B is not called slower on the CPU per GB
// at the offered rate. Not part of make test (it takes about 13 minutes):
//
//	sudo TWNSBENCH_COSTLY_WG=/path/wireguard-go-spin go test -run '^$' -bench BuildsCost -benchtime 1x ./cmd/twnsbench
func BenchmarkBuildsCost(b *testing.B) {
	nstest.RequireRoot(b)
	a, costly := os.Getenv("TWNSBENCH_PLAIN_WG"), os.Getenv("TWNSBENCH_COSTLY_WG")
	if a == "" {
		a = buildWireGuardGo(b)
	}
	bin := costly
	if bin == "" {
		bin = a
	}
	for i := 0; i < b.N; i++ {
		start := time.Now()
		doc, code, _, stderr := runTwoBuilds(b, b.TempDir(), [2]string{"a", "b"}, [2]string{a, bin},
			"--instruments", "iperf3-1,tcp_rr,"+instrument.CostName, "--duration", "5s", "--warmup", "1s", "--max-rounds", "20")
		if doc.Verdicts == nil {
			b.Fatalf("exit %d, no verdicts\n%s", code, stderr)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/verdict")
		for _, c := range doc.Verdicts.Cells {
			if c.Metric != "value" && !results.OwnCPUMetric(c.Metric) {
				continue
			}
			name := strings.ReplaceAll(c.Instrument+"-"+c.Metric, "_", "-")
			if c.Estimate.MDE != nil {
				b.ReportMetric(100**c.Estimate.MDE, "mde-%-"+name)
			}
			if c.Estimate.Ratio != nil {
				b.ReportMetric(100**c.Estimate.Ratio, "B/A-%-"+name)
			}
			b.Logf("%s/%s: %s over %d pairs (%s)", c.Instrument, c.Metric, c.Verdict, c.Pairs, c.Reason)
			cost := results.OwnCPUMetric(c.Metric)
			switch {
			case costly == "" && cost && c.Verdict == "slower":
				b.Errorf("A/A: %s/%s is slower", c.Instrument, c.Metric)
			case costly != "" && c.Metric == results.CostCPUPerGB && c.Verdict != "slower":
				b.Errorf("a costlier B: %s/%s is %s, not slower", c.Instrument, c.Metric, c.Verdict)
			}
		}
	}
}

// BenchmarkBuildsInstr is one run that decides the speed cells (iperf3-1,
// tcp_rr, 5 s samples) and the counted-instructions cell (iperf3-instr:
// the server's wireguard-go under valgrind, on paths of its own) of two
// builds: wireguard-go as A and, as B, $TWNSBENCH_COSTLY_WG (A then
// $TWNSBENCH_PLAIN_WG when set), or the same program again (A/A) when it
// is unset; up to 20 rounds, each cell at its default min effect (the
// counted cell's own 2 %). It reports each cell's smallest detectable
// change and B/A (%) and the run's wall time, and fails when an A/A calls
// a cell slower or faster, a costly B's counted cell is not called slower,
// or a counted cell was not decided at its metric's own min effect. Not
// part of make test (about 15 minutes; needs valgrind):
//
//	sudo TWNSBENCH_COSTLY_WG=/path/wireguard-go-spin go test -run '^$' -bench BuildsInstr -benchtime 1x -timeout 1h ./cmd/twnsbench
func BenchmarkBuildsInstr(b *testing.B) {
	nstest.RequireRoot(b)
	if _, err := exec.LookPath("valgrind"); err != nil {
		b.Skipf("no valgrind: %v", err)
	}
	a, costly := os.Getenv("TWNSBENCH_PLAIN_WG"), os.Getenv("TWNSBENCH_COSTLY_WG")
	if a == "" {
		a = buildWireGuardGo(b)
	}
	bin := costly
	if bin == "" {
		bin = a
	}
	for i := 0; i < b.N; i++ {
		start := time.Now()
		doc, code, _, stderr := runTwoBuilds(b, b.TempDir(), [2]string{"a", "b"}, [2]string{a, bin},
			"--instruments", "iperf3-1,tcp_rr,instr", "--duration", "5s", "--warmup", "1s", "--max-rounds", "20")
		if doc.Verdicts == nil {
			b.Fatalf("exit %d, no verdicts\n%s", code, stderr)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/verdict")
		b.Logf("exit %d", code)
		for _, c := range doc.Verdicts.Cells {
			name := strings.ReplaceAll(c.Instrument+"-"+c.Metric, "_", "-")
			if c.Estimate.MDE != nil {
				b.ReportMetric(100**c.Estimate.MDE, "mde-%-"+name)
			}
			if c.Estimate.Ratio != nil {
				b.ReportMetric(100**c.Estimate.Ratio, "B/A-%-"+name)
			}
			interval := "—"
			if c.Ratio != nil && c.Lo != nil && c.Hi != nil {
				interval = fmt.Sprintf("B/A %.3f (%.3f–%.3f)", *c.Ratio, *c.Lo, *c.Hi)
			}
			b.Logf("%s/%s: %s over %d pairs at min effect %g %%, %s (%s)", c.Instrument, c.Metric, c.Verdict, c.Pairs, 100*c.MinEffect, interval, c.Reason)
			counted := c.Instrument == instrument.InstrName && c.Metric == "value"
			switch {
			case costly == "" && (c.Verdict == "slower" || c.Verdict == "faster"):
				b.Errorf("A/A: %s/%s is %s", c.Instrument, c.Metric, c.Verdict)
			case costly != "" && counted && c.Verdict != "slower":
				b.Errorf("a costlier B: %s/%s is %s, not slower", c.Instrument, c.Metric, c.Verdict)
			case counted && c.MinEffect != instrument.InstrMinEffect:
				b.Errorf("%s/%s decided at min effect %g, want its own %g", c.Instrument, c.Metric, c.MinEffect, instrument.InstrMinEffect)
			}
		}
		// The speed cells' samples ran on paths without valgrind: a
		// counted path carries tens of times less.
		for _, s := range doc.Samples {
			if s.Instrument == "iperf3-1" && s.Value < 0.2 {
				b.Errorf("%s run %d: iperf3-1 %.3f Gbit/s, as if under valgrind", s.Transport, s.Run, s.Value)
			}
		}
	}
}

// BenchmarkBuildsAAHog is an A/A of one wireguard-go beside a CPU hog
// that comes and goes out of step with the rounds: two busy processes
// (one per core of this kind of host), on 5 s, off 4 s, while a round of
// iperf3-1 and tcp_rr takes about 7 s. No cell may end slower or faster;
// it reports each cell's MDE with the adjustment for the host's other
// work and before it (docs/builds.md). Not part of make test:
//
//	sudo go test -run '^$' -bench BuildsAAHog -benchtime 1x ./cmd/twnsbench
func BenchmarkBuildsAAHog(b *testing.B) {
	nstest.RequireRoot(b)
	wgGo := buildWireGuardGo(b)
	for i := 0; i < b.N; i++ {
		stop := startHog(b, 5*time.Second, 4*time.Second)
		start := time.Now()
		doc, code, _, stderr := runTwoBuilds(b, b.TempDir(), [2]string{"a", "b"}, [2]string{wgGo, wgGo},
			"--instruments", "iperf3-1,tcp_rr", "--duration", "2s", "--warmup", "0", "--max-rounds", "20")
		wall := time.Since(start)
		stop()
		if doc.Verdicts == nil {
			b.Fatalf("exit %d, no verdicts\n%s", code, stderr)
		}
		for _, c := range doc.Verdicts.Cells {
			if c.Verdict == "slower" || c.Verdict == "faster" {
				b.Errorf("A/A beside the hog: %s/%s is %s (%s)", c.Instrument, c.Metric, c.Verdict, c.Reason)
			}
			if c.Metric != "value" || c.MDE == nil {
				continue
			}
			name := strings.ReplaceAll(c.Instrument, "_", "-")
			b.ReportMetric(100**c.MDE, "mde-%-"+name)
			if c.MDEUnadjusted != nil {
				b.ReportMetric(100**c.MDEUnadjusted, "mde-unadjusted-%-"+name)
			}
			b.Logf("%s: %s over %d pairs (%s)", c.Instrument, c.Verdict, c.Pairs, c.Reason)
		}
		b.ReportMetric(wall.Seconds(), "s/verdict")
	}
}

// startHog starts two busy processes on, then none off, and so on until
// the returned stop ends them (by PID, and waits for them).
func startHog(b *testing.B, on, off time.Duration) (stop func()) {
	b.Helper()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			var hogs []*exec.Cmd
			for range 2 {
				c := exec.Command("sh", "-c", "while :; do :; done")
				if err := c.Start(); err != nil {
					b.Errorf("hog: %v", err)
					return
				}
				hogs = append(hogs, c)
			}
			onFor := time.NewTimer(on)
			select {
			case <-done:
			case <-onFor.C:
			}
			onFor.Stop()
			for _, c := range hogs {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
			select {
			case <-done:
				return
			case <-time.After(off):
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
