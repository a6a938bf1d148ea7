package nsbench

import (
	"math/rand/v2"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/verdict"
)

// abDoc is a document of two builds of wireguard-go measured in rounds
// of one instrument declaring metrics; sample(row, round) gives each
// build's sample of a round (its Transport, Condition, Instrument and Run
// are filled in).
func abDoc(in string, metrics []results.Metric, rounds int, sample func(b bool, round int) results.Sample) *results.Document {
	d := &results.Document{
		Transports:  []results.Transport{{Name: "wireguard-go@a"}, {Name: "wireguard-go@b"}},
		Instruments: []results.Instrument{{Name: in, Metrics: metrics}},
	}
	for run := 1; run <= rounds; run++ {
		for _, b := range []bool{false, true} {
			s := sample(b, run)
			s.Transport, s.Condition, s.Instrument, s.Run = "wireguard-go@a", "lan", in, run
			if b {
				s.Transport = "wireguard-go@b"
			}
			d.Samples = append(d.Samples, s)
		}
	}
	return d
}

// cellOfDoc is the one cell of metric key among d's paired cells.
func cellOfDoc(t *testing.T, d *results.Document, key string) verdict.Cell {
	t.Helper()
	for _, c := range pairCells(d, buildPairs(transportNames(d))) {
		if c.Metric == key {
			return c
		}
	}
	t.Fatalf("no paired cell of %s", key)
	return verdict.Cell{}
}

// decideAlone runs the verdict's procedure on one cell whose every round
// is known in advance: Plan from no rounds, Decide at every look on the
// rounds measured so far, until Plan stops or the cap (at most the
// rounds c has); it returns the last result.
func decideAlone(c verdict.Cell, maxRounds int) verdict.Result {
	all := c.Pairs
	maxRounds = min(maxRounds, len(all))
	rounds := 0
	var rs []verdict.Result
	for {
		more := verdict.Plan(rs, rounds, maxRounds, verdict.Options{})
		if more == 0 {
			return rs[0]
		}
		rounds += more
		c.Pairs = all[:rounds]
		rs = verdict.Decide([]verdict.Cell{c}, verdict.Options{})
	}
}

// statedFalseAlarms is the share of A/A runs docs/builds.md states may end
// "slower" (verdict.StatedFalseAlarms, held there by TestAAFalseAlarms).
const statedFalseAlarms = 0.01

// TestBuildsVerdictDifference: rrul's value is a difference (loaded minus
// idle latency, which can be ≤ 0), decided on B − A. B at 0 ± 3 ms is no
// worse than A at 0.5 ms; a log ratio that drops B's rounds ≤ 0 read it
// slower in about four runs of ten. Over 1,000 simulated runs through the
// whole procedure (cap 20, the default), the verdict says slower in at
// most the stated false-alarm rate of them.
func TestBuildsVerdictDifference(t *testing.T) {
	const runs, maxRounds = 1000, 20
	rng := rand.New(rand.NewPCG(43, 2))
	metrics := []results.Metric{{Key: "value", Unit: "ms", Better: results.BetterLower, Difference: true}}
	count := map[verdict.Kind]int{}
	for range runs {
		d := abDoc("rrul", metrics, maxRounds, func(b bool, _ int) results.Sample {
			if b {
				return results.Sample{Value: 3 * rng.NormFloat64()}
			}
			return results.Sample{Value: 0.5 + 0.1*rng.NormFloat64()}
		})
		count[decideAlone(cellOfDoc(t, d, "value"), maxRounds).Verdict]++
	}
	t.Logf("B 0 ± 3 ms against A 0.5 ms, %d runs: %v", runs, count)
	if rate := float64(count[verdict.Slower]) / runs; rate > statedFalseAlarms {
		t.Errorf("B at 0 ± 3 ms against A at 0.5 ms: slower in %.1f %% of %d runs, want at most %.0f %%", 100*rate, runs, 100*statedFalseAlarms)
	}
	// A real increase of 5 ms (beyond the 1 ms band) is seen: a
	// difference is decided, not just kept quiet.
	d := abDoc("rrul", metrics, maxRounds, func(b bool, _ int) results.Sample {
		if b {
			return results.Sample{Value: 5 + 0.5*rng.NormFloat64()}
		}
		return results.Sample{Value: 0.5 * rng.NormFloat64()}
	})
	if r := decideAlone(cellOfDoc(t, d, "value"), maxRounds); r.Verdict != verdict.Slower {
		t.Errorf("B 5 ms more than A: %s (%s), want slower", r.Verdict, r.Reason)
	}
}

// TestBuildsVerdictCensoredKnownSign: a B whose rrul p99 is "≥ 2000 ms"
// in every round against A's exact 20 ms is slower, whatever the bound
// hides: every pair's sign is known.
func TestBuildsVerdictCensoredKnownSign(t *testing.T) {
	p99 := "loaded_p99_ms"
	metrics := []results.Metric{{Key: "value", Unit: "ms", Better: results.BetterLower},
		{Key: p99, Unit: "ms", Better: results.BetterLower, CensoredBy: results.AtLeastKey(p99)}}
	d := abDoc("rrul", metrics, 12, func(b bool, round int) results.Sample {
		if b {
			return results.Sample{Value: 1, Extra: map[string]float64{p99: 2000, results.AtLeastKey(p99): 1}}
		}
		return results.Sample{Value: 1, Extra: map[string]float64{p99: 20 + float64(round%3)}}
	})
	c := cellOfDoc(t, d, p99)
	if r := decideAlone(c, 20); r.Verdict != verdict.Slower || r.N != 12 || r.Bounded != 12 {
		t.Errorf("B ≥ 2000 ms against A 20 ms: %s over %d pairs (%d at a bound): %s; want slower over 12 at their bound", r.Verdict, r.N, r.Bounded, r.Reason)
	}
	// A bound short of the other reading says nothing: left out.
	for i := range c.Pairs {
		c.Pairs[i].B = 10
	}
	if r := verdict.Decide([]verdict.Cell{c}, verdict.Options{})[0]; r.Verdict != verdict.Undecided || r.N != 0 || r.Censored != 12 {
		t.Errorf("B ≥ 10 ms against A 20 ms: %s over %d pairs, %d censored; want undecided, all 12 left out", r.Verdict, r.N, r.Censored)
	}
}

// TestBuildsVerdictCounts: retransmits are counts, often 0; rounds of 0
// are compared, not dropped: A with none in every round against B with a
// few is slower, and two builds with none are no change.
func TestBuildsVerdictCounts(t *testing.T) {
	metrics := []results.Metric{{Key: "value", Unit: "Gbit/s", Better: results.BetterHigher},
		{Key: "retransmits", Unit: "segments", Better: results.BetterLower}}
	for _, c := range []struct {
		name string
		b    func(round int) float64
		want verdict.Kind
	}{
		{"B retransmits", func(round int) float64 { return float64(3 + round%4) }, verdict.Slower},
		{"neither", func(int) float64 { return 0 }, verdict.NoChange},
	} {
		d := abDoc("iperf3-1", metrics, 12, func(b bool, round int) results.Sample {
			s := results.Sample{Value: 9, Extra: map[string]float64{"retransmits": 0}}
			if b {
				s.Extra["retransmits"] = c.b(round)
			}
			return s
		})
		r := decideAlone(cellOfDoc(t, d, "retransmits"), 20)
		if r.Verdict != c.want || r.N != 12 || r.Scale != verdict.ScaleCount {
			t.Errorf("%s: %s over %d pairs on the %q scale (%s); want %s over 12 as counts", c.name, r.Verdict, r.N, r.Scale, r.Reason, c.want)
		}
	}
}
