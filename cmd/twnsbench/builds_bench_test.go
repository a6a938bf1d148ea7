package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// BenchmarkBuildsAB is the speed of a verdict (issue 31, "Speed"): an A/B
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
