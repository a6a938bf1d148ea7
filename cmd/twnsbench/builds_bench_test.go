package main

import (
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
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
