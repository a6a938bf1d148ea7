package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// manyShortRounds is docs/builds.md's recipe for a verdict on a small
// shared host: 1 s samples without warm-up, 60 rounds before the first
// look, up to 100. Pairs taken seconds apart differ by less than pairs
// of long samples taken minutes apart, and the confirmation batch grows
// with the pairs.
var manyShortRounds = []string{"--duration", "1s", "--warmup", "0", "--runs", "60", "--max-rounds", "100"}

// BenchmarkBuildsAB is the speed of a verdict: an A/B
// of one transport — two builds of one real wireguard-go, so the truth is
// "no change" — with iperf3-1 and tcp_rr in many short rounds
// (manyShortRounds). It reports the run's wall time, the rounds measured,
// how many of the two cells were decided, and each cell's smallest
// detectable change (the verdict's MDE, %). Not part of make test (it
// takes minutes):
//
//	sudo go test -run '^$' -bench BuildsAB -benchtime 1x ./cmd/twnsbench
func BenchmarkBuildsAB(b *testing.B) {
	nstest.RequireRoot(b)
	wgGo := buildWireGuardGo(b)
	for i := 0; i < b.N; i++ {
		out := b.TempDir()
		start := time.Now()
		doc, code, _, stderr := runTwoBuilds(b, out, [2]string{"a", "b"}, [2]string{wgGo, wgGo},
			append([]string{"--instruments", "iperf3-1,tcp_rr"}, manyShortRounds...)...)
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
		b.ReportMetric(float64(decided), "decided-of-2")
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
// tcp_rr, in many short rounds: manyShortRounds) and the
// counted-instructions cell (iperf3-instr: the server's wireguard-go
// under valgrind, on paths of its own, 12 rounds before its first look) of
// two builds: wireguard-go as A and, as B, $TWNSBENCH_COSTLY_WG (A then
// $TWNSBENCH_PLAIN_WG when set), or the same program again (A/A) when it
// is unset; each cell at its default min effect (the counted cell's own
// 2 %). It reports each cell's smallest detectable
// change and B/A (%) and the run's wall time, and fails when an A/A calls
// a cell slower or faster, a costly B's counted cell is not called slower,
// or a counted cell was not decided at its metric's own min effect. Not
// part of make test (about 8 minutes; needs valgrind):
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
			append([]string{"--instruments", "iperf3-1,tcp_rr,instr"}, manyShortRounds...)...)
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
// iperf3-1 and tcp_rr in many short rounds (manyShortRounds) takes about
// 5 s. No cell may end slower or faster;
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
			append([]string{"--instruments", "iperf3-1,tcp_rr"}, manyShortRounds...)...)
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
	return inBackground(func(done <-chan struct{}) {
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
	})
}

// inBackground runs loop in a goroutine until the returned stop closes
// its done channel, and waits for loop to return.
func inBackground(loop func(done <-chan struct{})) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		loop(done)
	}()
	return func() {
		close(done)
		<-finished
	}
}

// BenchmarkBuildsKnownSlowdown is the speed cells' verdict on a slowdown
// of known size: one wireguard-go as both builds, B a copy of it at a path
// of its own, whose daemons (the processes running that path: the run's
// own) are stopped 5 ms of every 100 ms — 5 % of the time — all run long.
// iperf3-1 and tcp_rr in many short rounds (manyShortRounds), with a
// min effect of 3 %: a true change of 5 % lies on the default band's edge,
// where a verdict is a coin's toss by design. Both cells must be called
// slower, and their B/A lie within 0.90–0.99; it reports each cell's B/A
// and smallest detectable change (%). Not part of make test:
//
//	sudo go test -run '^$' -bench BuildsKnownSlowdown -benchtime 1x ./cmd/twnsbench
func BenchmarkBuildsKnownSlowdown(b *testing.B) {
	nstest.RequireRoot(b)
	wgGo := buildWireGuardGo(b)
	program, err := os.ReadFile(wgGo)
	if err != nil {
		b.Fatal(err)
	}
	stopped := filepath.Join(b.TempDir(), "wireguard-go-stopped")
	if err := os.WriteFile(stopped, program, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		end := startStopping(b, stopped, 5*time.Millisecond, 100*time.Millisecond)
		start := time.Now()
		doc, code, _, stderr := runTwoBuilds(b, b.TempDir(), [2]string{"a", "b"}, [2]string{wgGo, stopped},
			append([]string{"--instruments", "iperf3-1,tcp_rr", "--min-effect", "3%"}, manyShortRounds...)...)
		wall := time.Since(start)
		end()
		if doc.Verdicts == nil {
			b.Fatalf("exit %d, no verdicts\n%s", code, stderr)
		}
		for _, c := range doc.Verdicts.Cells {
			if c.Metric != "value" {
				continue
			}
			name := strings.ReplaceAll(c.Instrument, "_", "-")
			if c.MDE != nil {
				b.ReportMetric(100**c.MDE, "mde-%-"+name)
			}
			if c.Ratio == nil {
				b.Errorf("%s: no B/A (%s)", c.Instrument, c.Reason)
				continue
			}
			b.ReportMetric(100**c.Ratio, "B/A-%-"+name)
			b.Logf("%s: %s over %d pairs, B/A %.3f (%s)", c.Instrument, c.Verdict, c.Pairs, *c.Ratio, c.Reason)
			if c.Verdict != "slower" || *c.Ratio < 0.90 || *c.Ratio > 0.99 {
				b.Errorf("B stopped 5 %% of the time: %s is %s, B/A %.3f; want slower, 0.90–0.99", c.Instrument, c.Verdict, *c.Ratio)
			}
		}
		b.ReportMetric(wall.Seconds(), "s/verdict")
		b.Logf("exit %d", code)
	}
}

// startStopping stops every process running the program at path for
// pause in every period (SIGSTOP, then SIGCONT), until the returned end
// lets the last ones go on and returns. The processes are found by their
// executable, /proc/PID/exe: the program is a copy this benchmark made, so
// only the run's own daemons run it.
func startStopping(b *testing.B, path string, pause, period time.Duration) (end func()) {
	b.Helper()
	return inBackground(func(done <-chan struct{}) {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			pids := pidsRunning(path)
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGSTOP)
			}
			time.Sleep(pause) // the pause itself is the slowdown, not a wait for a condition
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
		}
	})
}

// pidsRunning lists the PIDs whose executable is path.
func pidsRunning(path string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == path {
			pids = append(pids, pid)
		}
	}
	return pids
}

// BenchmarkBuildsPublished checks a verdict against the same comparison
// made by hand: an older published wireguard-go (publishedWireGuardGo,
// fetched through the Go module proxy) as A against go.mod's as B, in many
// short rounds (manyShortRounds), and then each version alone in plain
// runs (4 samples of 1 s after a 1 s warm-up), 12 pairs of runs in ABBA
// order, each pair's ratio of medians, their Hodges–Lehmann estimate and
// signed-rank 95 % interval. Per cell of iperf3-1 and tcp_rr the verdict's
// interval of B/A must meet the plain runs', and a cell called slower or
// faster must not point against an interval of the plain runs that lies
// on one side of 1; it reports both estimates (%). Not part of make test
// (about 12 minutes):
//
//	sudo go test -run '^$' -bench BuildsPublished -benchtime 1x -timeout 1h ./cmd/twnsbench
func BenchmarkBuildsPublished(b *testing.B) {
	nstest.RequireRoot(b)
	newer, older := buildWireGuardGo(b), installPublishedWireGuardGo(b)
	for i := 0; i < b.N; i++ {
		doc, code, _, stderr := runTwoBuilds(b, b.TempDir(), [2]string{"old", "new"}, [2]string{older, newer},
			append([]string{"--instruments", "iperf3-1,tcp_rr"}, manyShortRounds...)...)
		if doc.Verdicts == nil {
			b.Fatalf("exit %d, no verdicts\n%s", code, stderr)
		}
		byHand := plainRatios(b, older, newer)
		for _, c := range doc.Verdicts.Cells {
			hand, ok := byHand[c.Instrument]
			if c.Metric != "value" || !ok {
				continue
			}
			if c.Ratio == nil || c.Lo == nil || c.Hi == nil {
				b.Errorf("%s: no B/A (%s)", c.Instrument, c.Reason)
				continue
			}
			name := strings.ReplaceAll(c.Instrument, "_", "-")
			b.ReportMetric(100**c.Ratio, "B/A-%-"+name)
			b.ReportMetric(100*hand.ratio, "by-hand-B/A-%-"+name)
			b.Logf("%s: %s over %d pairs, B/A %.3f (%.3f–%.3f); by hand %.3f (%.3f–%.3f) (%s)",
				c.Instrument, c.Verdict, c.Pairs, *c.Ratio, *c.Lo, *c.Hi, hand.ratio, hand.lo, hand.hi, c.Reason)
			if *c.Hi < hand.lo || *c.Lo > hand.hi {
				b.Errorf("%s: the verdict's B/A %.3f–%.3f misses the plain runs' %.3f–%.3f", c.Instrument, *c.Lo, *c.Hi, hand.lo, hand.hi)
			}
			if (c.Verdict == "slower" && hand.lo > 1) || (c.Verdict == "faster" && hand.hi < 1) {
				b.Errorf("%s: called %s, while by hand B/A is %.3f–%.3f", c.Instrument, c.Verdict, hand.lo, hand.hi)
			}
		}
	}
}

// handRatio is B/A measured by hand: an estimate and its 95 % interval.
type handRatio struct{ ratio, lo, hi float64 }

// plainRatios measures each program alone in plain runs of iperf3-1 and
// tcp_rr (4 samples of 1 s after a 1 s warm-up), 12 pairs of runs in ABBA
// order, and gives per instrument B/A over the pairs' ratios of medians
// (both higher is better).
func plainRatios(b *testing.B, a, bProgram string) map[string]handRatio {
	b.Helper()
	medians := func(program string) map[string]float64 {
		out := b.TempDir()
		code, _, stderr := runInProcess("run", "--transports", "wireguard-go", "--wireguard-go", program, "--wan", "off",
			"--instruments", "iperf3-1,tcp_rr", "--runs", "4", "--duration", "1s", "--warmup", "1s", "--out", out)
		doc, err := results.Read(filepath.Join(out, results.FileName))
		if err != nil {
			b.Fatalf("plain run of %s: exit %d, no results: %v\n%s", program, code, err, stderr)
		}
		values := map[string][]float64{}
		for _, s := range doc.Samples {
			if s.Value > 0 {
				values[s.Instrument] = append(values[s.Instrument], s.Value)
			}
		}
		m := map[string]float64{}
		for in, v := range values {
			m[in] = stats.Median(v)
		}
		return m
	}
	logs := map[string][]float64{}
	for pair := range 12 {
		var ma, mb map[string]float64
		if pair%2 == 0 {
			ma, mb = medians(a), medians(bProgram)
		} else {
			mb, ma = medians(bProgram), medians(a)
		}
		for _, in := range []string{"iperf3-1", "tcp_rr"} {
			if ma[in] > 0 && mb[in] > 0 {
				logs[in] = append(logs[in], math.Log(mb[in]/ma[in]))
			}
		}
	}
	out := map[string]handRatio{}
	for in, d := range logs {
		est, ci := stats.HodgesLehmannCI(d, 0.95)
		out[in] = handRatio{math.Exp(est), math.Exp(ci.Low), math.Exp(ci.High)}
	}
	return out
}
