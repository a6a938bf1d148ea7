package verdict

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// cellOf is a cell whose round i has A = 100 and B = 100·ratios[i].
func cellOf(better string, ratios ...float64) Cell {
	c := Cell{Transport: "tw", Condition: "lan", Instrument: "iperf3-1", Metric: "value", Unit: "Gbit/s", Better: better}
	for i, r := range ratios {
		c.Pairs = append(c.Pairs, Pair{Round: i + 1, A: 100, B: 100 * r})
	}
	return c
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func seq(from, step float64, n int) []float64 {
	var xs []float64
	for i := range n {
		xs = append(xs, from+step*float64(i))
	}
	return xs
}

// TestDecideKnownAnswers: the numbers were computed apart from the code
// (the Walsh averages of the logs enumerated; the p-values counted: all 12
// of one sign is 2/4096 two-sided).
func TestDecideKnownAnswers(t *testing.T) {
	// Ratios 0.80, 0.81, … 0.91: HL 0.854459, interval [W(14), W(65)] =
	// [0.829759, 0.879943]; all below 1, the first six alone p = 2/64, the
	// last six alone one-sided 1/64: confirmed.
	down := seq(0.80, 0.01, 12)
	rs := Decide([]Cell{cellOf(results.BetterHigher, down...)}, Options{})
	r := rs[0]
	if r.N != 12 || !near(r.Ratio, 0.854458857034442) || !near(r.Lo, 0.8297590011563599) ||
		!near(r.Hi, 0.8799431799837988) || !near(r.P, 2./4096) || !near(r.Q, 2./4096) || r.Verdict != Slower {
		t.Errorf("0.80…0.91, higher better: %+v; want slower, ratio 0.8545 (0.8298–0.8799), p = q = 2/4096", r)
	}
	if math.IsNaN(r.MDE) || r.MDE <= 0 || r.MDE >= 0.1 {
		t.Errorf("MDE %v: want a small positive change for so tight a cell", r.MDE)
	}
	// The same ratios for a metric better when lower (latency) are faster.
	if r := Decide([]Cell{cellOf(results.BetterLower, down...)}, Options{})[0]; r.Verdict != Faster {
		t.Errorf("0.80…0.91, lower better: %s (%s), want faster", r.Verdict, r.Reason)
	}
	// Within ±2 %: interval [0.99, 1.01] lies inside [1/1.05, 1.05].
	eq := Decide([]Cell{cellOf(results.BetterHigher, 1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.00, 1.02, 0.98, 1.01)}, Options{})[0]
	if eq.Verdict != NoChange || !near(eq.Ratio, 1) || !near(eq.Lo, 0.99) || !near(eq.Hi, 1.01) {
		t.Errorf("±2 %%: %+v, want no change, 1 (0.99–1.01)", eq)
	}
	// Significant (all below 1) but 3 %, and the interval reaches 0.908:
	// neither a change nor equivalence.
	small := Decide([]Cell{cellOf(results.BetterHigher, append(append([]float64{0.85}, seq(0.97, 0, 10)...), 0.85)...)}, Options{})[0]
	if small.Verdict != Undecided || !near(small.Ratio, 0.97) || !near(small.Lo, 0.9080198235721508) ||
		!strings.Contains(small.Reason, "significant but 3 % < min effect 5 %") {
		t.Errorf("3 %% significant: %s, ratio %v lo %v, %q; want undecided, 0.97, 0.908, significant but 3 %% < min effect 5 %%",
			small.Verdict, small.Ratio, small.Lo, small.Reason)
	}
	// 25 % slower on all 12 pairs (T+ = 3: p = 10/4096), but the first
	// six alone have T+ = 3 of 21: p = 10/64, not significant.
	unconf := Decide([]Cell{cellOf(results.BetterHigher, 0.70, 0.71, 0.72, 0.73, 1.02, 1.03, 0.74, 0.75, 0.76, 0.77, 0.78, 0.79)}, Options{})[0]
	if unconf.Verdict != Undecided || !near(unconf.P, 10./4096) ||
		!strings.Contains(unconf.Reason, "slower on all 12 pairs, not confirmed: the first 6 pairs alone: p 0.16") {
		t.Errorf("unconfirmed: %s p %v %q; want undecided, p 10/4096, not confirmed by the first 6", unconf.Verdict, unconf.P, unconf.Reason)
	}
	// Six pairs of 20 % slower: significant (2/64) and big, but no fresh
	// batch to confirm it.
	six := Decide([]Cell{cellOf(results.BetterHigher, seq(0.8, 0, 6)...)}, Options{})[0]
	if six.Verdict != Undecided || !math.IsNaN(six.MDE) || !strings.Contains(six.Reason, "needs 12 pairs") {
		t.Errorf("six pairs: %s MDE %v %q; want undecided, no MDE, needs 12 pairs", six.Verdict, six.MDE, six.Reason)
	}
	// Five pairs: no 95 % interval at all.
	five := Decide([]Cell{cellOf(results.BetterHigher, seq(0.8, 0, 5)...)}, Options{})[0]
	if five.Verdict != Undecided || !math.IsNaN(five.Lo) || !math.IsNaN(five.Hi) || !near(five.Ratio, 0.8) {
		t.Errorf("five pairs: %+v; want undecided, ratio 0.8, no interval", five)
	}
}

// TestDecideLeavesOut: a censored reading is never paired as exact: a
// pair whose bound lies short of the other reading (its sign unknown) is
// left out, one whose bound lies beyond it is used at the bound; a
// reading ≤ 0 or NaN of a ratio cell is left out with a reason.
func TestDecideLeavesOut(t *testing.T) {
	c := cellOf(results.BetterHigher, seq(0.80, 0.01, 12)...)
	c.Pairs = append(c.Pairs,
		Pair{Round: 13, A: 100, B: 500, ACensored: true}, // A ≥ 100 against 500: either way
		Pair{Round: 14, A: 100, B: 500, BCensored: true}, // B ≥ 500 against 100: faster, unknown how much
		Pair{Round: 15, A: 500, B: 100, ACensored: true}, // A ≥ 500 against 100: slower, at least 5×
		Pair{Round: 16, A: -1, B: 50},
		Pair{Round: 17, A: math.NaN(), B: 50})
	as, bs, censored, invalid := c.Readings()
	if len(as) != 14 || as[12] != 100 || bs[12] != 500 || as[13] != 500 || bs[13] != 100 || censored != 1 || invalid != 2 {
		t.Errorf("readings %v / %v, %d censored, %d invalid; want 14 pairs ending 100/500 and 500/100 (bounds as values), 1 censored, 2 invalid", as, bs, censored, invalid)
	}
	c.Pairs = slices.DeleteFunc(c.Pairs, func(p Pair) bool { return p.Round == 14 })
	r := Decide([]Cell{c}, Options{})[0]
	if r.N != 13 || r.Censored != 1 || r.Bounded != 1 || r.Verdict != Slower || r.Scale != ScaleRatio ||
		!strings.Contains(r.Reason, "2 pairs left out: a reading ≤ 0 or not a number") ||
		!strings.Contains(r.Reason, "1 pairs at a bound (≥) beyond the other reading") {
		t.Errorf("%+v; want N 13 (one at its bound), 1 censored, slower, and the 2 invalid pairs named", r)
	}
}

// TestDecideAdjustsAcrossCells: Q is the Benjamini–Hochberg value over
// the call's cells. Cell 1: p = 2/4096; cell 2: T+ = 3 of 12, p = 10/4096;
// cell 3: three pairs all below, p = 2/8. m·p/rank = 6/4096, 15/4096, 0.25,
// already increasing, so they are the q-values.
func TestDecideAdjustsAcrossCells(t *testing.T) {
	rs := Decide([]Cell{
		cellOf(results.BetterHigher, seq(0.80, 0.01, 12)...),
		cellOf(results.BetterHigher, 0.70, 0.71, 0.72, 0.73, 1.02, 1.03, 0.74, 0.75, 0.76, 0.77, 0.78, 0.79),
		cellOf(results.BetterHigher, seq(0.8, 0, 3)...),
	}, Options{})
	if !near(rs[0].Q, 6./4096) || !near(rs[1].Q, 15./4096) || !near(rs[2].Q, 0.25) {
		t.Errorf("q = %v, %v, %v; want 6/4096, 15/4096, 0.25", rs[0].Q, rs[1].Q, rs[2].Q)
	}
}

func TestPlan(t *testing.T) {
	und := []Result{{Verdict: NoChange}, {Verdict: Undecided}}
	done := []Result{{Verdict: NoChange}, {Verdict: Slower}, {Verdict: Faster}}
	for _, c := range []struct {
		name              string
		rs                []Result
		rounds, max, want int
	}{
		{"first batch", nil, 0, 30, FirstLook},
		{"first batch, capped", nil, 0, 8, 8},
		{"first batch topped up", und, 7, 30, FirstLook - 7},
		{"undecided", und, 12, 30, ConfirmPairs},
		{"undecided near the cap", und, 28, 30, 2},
		{"undecided at the cap", und, 30, 30, 0},
		{"all decided", done, 12, 30, 0},
	} {
		if got := Plan(c.rs, c.rounds, c.max, Options{}); got != c.want {
			t.Errorf("%s: Plan = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestMDEIsDetectedFourTimesInFive: cells whose log ratios are normal
// with spread 0.1, shifted by the MDE their spread gives, are called
// slower by Decide in about 80 % of cases (the MDE's promise), at 12 and
// 24 pairs, and with spread 0.2 at 60. (The spread is large enough that
// the MDE is far above the min effect, which the MDE leaves out.)
func TestMDEIsDetectedFourTimesInFive(t *testing.T) {
	const cells = 2000
	for _, c := range []struct {
		n     int
		sigma float64
	}{{12, 0.1}, {24, 0.1}, {60, 0.2}} {
		n, sigma := c.n, c.sigma
		shift := detectableShift(n, DefaultAlpha) * sigma
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		hits := 0
		var mdes []float64
		for range cells {
			c := Cell{Better: results.BetterHigher}
			for i := range n {
				c.Pairs = append(c.Pairs, Pair{Round: i + 1, A: 1, B: math.Exp(-shift + sigma*rng.NormFloat64())})
			}
			r := Decide([]Cell{c}, Options{})[0]
			mdes = append(mdes, r.MDE)
			if r.Verdict == Slower {
				hits++
			}
		}
		power := float64(hits) / cells
		t.Logf("%d pairs: θ %.3f, shift %.1f %%, median MDE %.1f %%, called slower in %.1f %%", n, shift/sigma, 100*math.Expm1(shift), 100*stats.Median(mdes), 100*power)
		if math.Abs(power-mdePower) > 0.03 {
			t.Errorf("%d pairs: a change of the MDE was called slower in %.1f %% of cells, want 80 ± 3 %%", n, 100*power)
		}
		if m := stats.Median(mdes); math.Abs(m-math.Expm1(shift)) > 0.02 {
			t.Errorf("%d pairs: median MDE %.3f, want about %.3f", n, m, math.Expm1(shift))
		}
	}
}

// TestConfirmationGrowsWithPairs: the confirmation batch is the later
// half of the pairs, so many pairs confirm a change that their last six
// alone would not (three of them against it), and the rule's detectable
// shift keeps falling with the pairs instead of stopping at the six
// pairs' 1.2 standard deviations.
func TestConfirmationGrowsWithPairs(t *testing.T) {
	c := Cell{Better: results.BetterHigher}
	for i := range 54 {
		c.Pairs = append(c.Pairs, Pair{Round: i + 1, A: 1, B: math.Exp(-0.08 + 0.05*float64(i%2*2-1))})
	}
	for i, l := range []float64{0.03, -0.15, 0.02, -0.14, 0.04, -0.16} {
		c.Pairs = append(c.Pairs, Pair{Round: 55 + i, A: 1, B: math.Exp(l)})
	}
	r := Decide([]Cell{c}, Options{})[0]
	if r.Verdict != Slower || !strings.Contains(r.Reason, "confirmed on the last 30 pairs") {
		t.Errorf("60 pairs about 8 %% slower, 3 of the last 6 the other way: %s (%s), want slower, confirmed on the last 30 pairs", r.Verdict, r.Reason)
	}
	if ConfirmBatch(12) != 6 || ConfirmBatch(13) != 6 || ConfirmBatch(60) != 30 {
		t.Errorf("confirmation batches %d, %d, %d for 12, 13, 60 pairs; want 6, 6, 30", ConfirmBatch(12), ConfirmBatch(13), ConfirmBatch(60))
	}
	if at12, at60 := detectableShift(12, DefaultAlpha), detectableShift(60, DefaultAlpha); at60 > 0.65 || at60 > at12/2 {
		t.Errorf("θ at 60 pairs %.3f (at 12: %.3f), want at most 0.65 and half of 12's", at60, at12)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{}, {MinEffect: 0.1, Alpha: 0.01}} {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v, want accepted", o, err)
		}
	}
	for _, o := range []Options{{MinEffect: -0.05}, {MinEffect: 5}, {MinEffect: math.NaN()}, {Alpha: 0.9}, {Alpha: -1}, {Alpha: math.NaN()}} {
		if err := o.Validate(); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want a one-line refusal", o, err)
		}
	}
}

// Past mdeMaxPairs the shift is mdeMaxPairs', an upper bound of the true
// one (the rule's power grows with n): a document naming a thousand pairs
// costs what 64 do, and the MDE it gets is a cautious one.
func TestDetectableShiftCapped(t *testing.T) {
	at := detectableShift(mdeMaxPairs, DefaultAlpha)
	if got := detectableShift(1000, DefaultAlpha); got != at {
		t.Errorf("θ at 1000 pairs %.3f, want the cap's %.3f", got, at)
	}
	if below := detectableShift(mdeMaxPairs/2, DefaultAlpha); below < at {
		t.Errorf("θ at %d pairs %.3f is below the cap's %.3f: the cap would not be an upper bound", mdeMaxPairs/2, below, at)
	}
}

// TestMinEffectPerMetric: without a run's min effect each cell is decided
// against its metric's own (a count of instructions: 2 %), else the
// default 5 %; a run's min effect applies to every cell. Each result, and
// its record, says which it used.
func TestMinEffectPerMetric(t *testing.T) {
	// 2.5 … 3.6 % more instructions a byte in every pair: significant and
	// confirmed, its interval above 2 % and within 5 %.
	counted := cellOf(results.BetterLower, seq(1.025, 0.001, 12)...)
	counted.Instrument, counted.Unit, counted.OwnMinEffect = "iperf3-instr", "instr/B", 0.02
	plain := cellOf(results.BetterLower, seq(1.025, 0.001, 12)...)
	for _, tc := range []struct {
		o                    Options
		counted, plain       Kind
		countedMin, plainMin float64
	}{
		{Options{}, Slower, NoChange, 0.02, DefaultMinEffect},
		{Options{MinEffect: 0.05}, NoChange, NoChange, 0.05, 0.05},
		{Options{MinEffect: 0.01}, Slower, Slower, 0.01, 0.01},
	} {
		rs := Decide([]Cell{counted, plain}, tc.o)
		if rs[0].Verdict != tc.counted || rs[0].MinEffect != tc.countedMin || rs[0].Band != tc.countedMin {
			t.Errorf("%+v: counted cell %s at min effect %v (band %v, %s); want %s at %v", tc.o, rs[0].Verdict, rs[0].MinEffect, rs[0].Band, rs[0].Reason, tc.counted, tc.countedMin)
		}
		if rs[1].Verdict != tc.plain || rs[1].MinEffect != tc.plainMin {
			t.Errorf("%+v: plain cell %s at min effect %v (%s); want %s at %v", tc.o, rs[1].Verdict, rs[1].MinEffect, rs[1].Reason, tc.plain, tc.plainMin)
		}
		if rec := rs[0].Record(); rec.MinEffect != tc.countedMin {
			t.Errorf("%+v: recorded min effect %v, want %v", tc.o, rec.MinEffect, tc.countedMin)
		}
	}
	if r := Decide([]Cell{plain}, Options{})[0]; !strings.Contains(r.Reason, "within ±5 %") {
		t.Errorf("plain cell's reason %q: want it to name the 5 %% it was held to", r.Reason)
	}
	// A difference cell's band is its own min effect of A's level.
	d := cellOf(results.BetterLower, seq(1.025, 0.001, 12)...)
	d.Scale, d.OwnMinEffect = ScaleDifference, 0.02
	if r := Decide([]Cell{d}, Options{})[0]; !near(r.Band, 2) || r.MinEffect != 0.02 {
		t.Errorf("difference cell: band %v at min effect %v, want 2 (2 %% of A's 100)", r.Band, r.MinEffect)
	}
}
