package verdict

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// simMetric is one cell of a simulated A/B run, with noise like this
// host's: each reading lognormal around its median with the given CV, one
// reading in twenty meeting other work (15 % worse), and a slow drift of
// ±10 % over the run that the alternating order of each round should
// cancel.
type simMetric struct {
	name, better string
	cvLo, cvHi   float64 // each run draws its CV from [cvLo, cvHi]
}

var simMetrics = []simMetric{
	{"iperf3-1", results.BetterHigher, 0.05, 0.10},
	{"tcp_rr", results.BetterHigher, 0.03, 0.03},
	{"tcp_rr p50", results.BetterLower, 0.03, 0.03},
}

// simRun runs the whole procedure once: Plan from no rounds, Decide at
// every look, until Plan says stop or maxRounds. slowdown makes B that much
// slower than A in every cell (0 for an A/A run).
func simRun(rng *rand.Rand, metrics []simMetric, slowdown float64, maxRounds int) ([]Result, int) {
	cells := make([]Cell, len(metrics))
	cvs := make([]float64, len(metrics))
	for i, m := range metrics {
		cells[i] = Cell{Transport: "tw", Instrument: m.name, Metric: "value", Better: m.better}
		cvs[i] = m.cvLo + (m.cvHi-m.cvLo)*rng.Float64()
	}
	period := 20 + 60*rng.Float64() // readings per drift cycle
	phase := 2 * math.Pi * rng.Float64()
	drift := func(t int) float64 { return 1 + 0.10*math.Sin(2*math.Pi*float64(t)/period+phase) }
	read := func(i, t int, slow float64) float64 {
		worse := (1 - slow) * math.Exp(cvs[i]*rng.NormFloat64())
		if rng.Float64() < 0.05 {
			worse *= 0.85
		}
		if metrics[i].better == results.BetterLower {
			return 100 * drift(t) / worse
		}
		return 100 * drift(t) * worse
	}
	rounds := 0
	var rs []Result
	for {
		more := Plan(rs, rounds, maxRounds, Options{})
		if more == 0 {
			return rs, rounds
		}
		for range more {
			rounds++
			tA, tB := 2*rounds, 2*rounds+1 // A then B, then B then A
			if rounds%2 == 0 {
				tA, tB = tB, tA
			}
			for i := range cells {
				cells[i].Pairs = append(cells[i].Pairs, Pair{Round: rounds, A: read(i, tA, 0), B: read(i, tB, slowdown)})
			}
		}
		rs = Decide(cells, Options{})
	}
}

// simTally counts a batch of simulated runs.
type simTally struct {
	runs, cells, rounds int
	perMetric           []map[Kind]int
	runsSlower          int // runs with at least one cell slower: a failed job
}

func simulate(seed uint64, runs int, metrics []simMetric, slowdown float64, maxRounds int) simTally {
	rng := rand.New(rand.NewPCG(seed, 31))
	s := simTally{runs: runs, perMetric: make([]map[Kind]int, len(metrics))}
	for i := range s.perMetric {
		s.perMetric[i] = map[Kind]int{}
	}
	for range runs {
		rs, rounds := simRun(rng, metrics, slowdown, maxRounds)
		s.rounds += rounds
		anySlower := false
		for i, r := range rs {
			s.perMetric[i][r.Verdict]++
			s.cells++
			anySlower = anySlower || r.Verdict == Slower
		}
		if anySlower {
			s.runsSlower++
		}
	}
	return s
}

func (s simTally) total(k Kind) int {
	n := 0
	for _, m := range s.perMetric {
		n += m[k]
	}
	return n
}

// StatedFalseAlarms is the level docs/builds.md states for A/A runs: at most
// this share of runs fails (a cell "slower") at the default options, in
// the scenarios TestAAFalseAlarms simulates.
const StatedFalseAlarms = 0.01

// TestAAFalseAlarms simulates 3,000 A/A runs (one build as both A and B)
// through the whole procedure, Plan and Decide: three cells each up to 20
// rounds (the default cap: looks at 12, 18, 20), up to 30 (looks at 12,
// 18, 24, 30), up to 60 (nine looks) and up to 100 (fifteen: many short
// rounds), and twelve cells each (the three four times) up to 30. The share of runs that end
// with any cell "slower" must stay at or below the stated 1 % — and at
// this fixed seed it is the figure docs/builds.md states.
func TestAAFalseAlarms(t *testing.T) {
	const runs = 3000
	twelve := slices.Concat(simMetrics, simMetrics, simMetrics, simMetrics)
	for _, c := range []struct {
		metrics   []simMetric
		maxRounds int
	}{{simMetrics, 20}, {simMetrics, 30}, {simMetrics, 60}, {simMetrics, 100}, {twelve, 30}} {
		t.Run(fmt.Sprintf("%dcells-cap%d", len(c.metrics), c.maxRounds), func(t *testing.T) {
			t.Parallel() // pure arithmetic, seeded per scenario: both cores
			aaScenario(t, runs, c.metrics, c.maxRounds)
		})
	}
}

// aaScenario is one scenario of TestAAFalseAlarms: runs A/A runs of
// metrics' cells, each up to maxRounds rounds.
func aaScenario(t *testing.T, runs int, metrics []simMetric, maxRounds int) {
	s := simulate(2026, runs, metrics, 0, maxRounds)
	n := float64(runs)
	rate := float64(s.runsSlower) / n
	t.Logf("A/A, %d cells, cap %d: %d runs, %d cells: %d slower, %d faster, %d no change, %d undecided; %d runs with a slower cell (%.2f %%); %.1f rounds per run",
		len(metrics), maxRounds, runs, s.cells, s.total(Slower), s.total(Faster), s.total(NoChange), s.total(Undecided), s.runsSlower, 100*rate, float64(s.rounds)/n)
	if runs < 2000 {
		t.Fatalf("%d A/A runs simulated, want ≥ 2000", runs)
	}
	if rate > StatedFalseAlarms {
		t.Errorf("%d cells, cap %d: %d of %d A/A runs ended slower (%.2f %%), above the stated %.0f %%",
			len(metrics), maxRounds, s.runsSlower, runs, 100*rate, 100*StatedFalseAlarms)
	}
	wantStated(t, fmt.Sprintf("%d cells, cap %d rounds: %d of %s runs (%.2f %%, %.1f rounds per run; per cell %.2f %%)",
		len(metrics), maxRounds, s.runsSlower, thousands(runs), 100*rate, float64(s.rounds)/n,
		100*float64(s.total(Slower))/float64(s.cells)))
}

// TestPower simulates 1,000 runs each with B 20 % and 10 % slower in every
// cell, up to 30 rounds, and 6 % slower up to 100 rounds (many short
// rounds), and states, per cell, how often the procedure ends "slower". The
// figures at this fixed seed are pinned in docs/builds.md; the 20 % one must
// find nearly every regression.
func TestPower(t *testing.T) {
	const runs = 1000
	for _, c := range []struct {
		slowdown  float64
		maxRounds int
		least     float64 // the power below which the test fails
	}{{0.20, 30, 0.9}, {0.10, 30, 0.3}, {0.06, 100, 0.5}} {
		t.Run(fmt.Sprintf("%.0f%%-cap%d", 100*c.slowdown, c.maxRounds), func(t *testing.T) {
			t.Parallel() // pure arithmetic, seeded per case: both cores
			powerCase(t, runs, c.slowdown, c.maxRounds, c.least)
		})
	}
}

// powerCase is one slowdown of TestPower: B slowdown slower in every
// cell, up to maxRounds rounds, each metric called slower in at least
// least of the runs.
func powerCase(t *testing.T, runs int, slowdown float64, maxRounds int, least float64) {
	s := simulate(2027, runs, simMetrics, slowdown, maxRounds)
	n := float64(runs)
	var parts []string
	for i, m := range simMetrics {
		p := float64(s.perMetric[i][Slower]) / n
		parts = append(parts, fmt.Sprintf("%s %.1f %%", m.name, 100*p))
		if p < least {
			t.Errorf("%.0f %% slower, %s: called slower in %.1f %% of runs, want ≥ %.0f %%", 100*slowdown, m.name, 100*p, 100*least)
		}
		if s.perMetric[i][Faster] > 0 {
			t.Errorf("%.0f %% slower, %s: called faster %d times", 100*slowdown, m.name, s.perMetric[i][Faster])
		}
	}
	line := fmt.Sprintf("%.0f %% slower, cap %d: %s (%.1f rounds per run)", 100*slowdown, maxRounds, strings.Join(parts, ", "), float64(s.rounds)/n)
	t.Log(line)
	wantStated(t, line)
}

// statedIn is the page that states the verdict's simulated figures.
const statedIn = "../../docs/builds.md"

// wantStated fails unless docs/builds.md states line (spaces and line
// breaks folded).
func wantStated(t *testing.T, line string) {
	t.Helper()
	page, err := os.ReadFile(statedIn)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(page)), " "), line) {
		t.Errorf("%s does not state this seed's figures: it lacks %q", statedIn, line)
	}
}

// thousands writes n with a comma between thousands, as the docs do.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestNoChangeLevel states how often "no change" is said of a change that
// is not smaller than the min effect: B exactly 5 % slower in every cell
// (the band's edge, where equivalence is false), 1,000 runs through the
// whole procedure at the default cap of 20 rounds, every look able to end
// a cell "no change". Each look's interval misses on that side in at most
// 2.5 % of cells, and the looks add up; the share at this fixed seed is
// the one docs/builds.md states, and it must stay within 3 × 2.5 %.
func TestNoChangeLevel(t *testing.T) {
	const runs = 1000
	s := simulate(2028, runs, simMetrics, DefaultMinEffect/(1+DefaultMinEffect), 20)
	var parts []string
	for i, m := range simMetrics {
		p := float64(s.perMetric[i][NoChange]) / runs
		parts = append(parts, fmt.Sprintf("%s %.1f %%", m.name, 100*p))
		if p > 3*0.025 {
			t.Errorf("%s: no change at the band's edge in %.1f %% of runs, want at most 7.5 %%", m.name, 100*p)
		}
	}
	line := fmt.Sprintf("at the band's edge, cap 20: no change %s", strings.Join(parts, ", "))
	t.Log(line)
	wantStated(t, line)
}

// simCondition is one condition's block of a simulated run: its cells are
// planned together (the run asks Plan about one block's cells at a time),
// and each reading may fail (no pair that round) or be censored (a
// tail-latency probe that outlasted its test: "≥ bound").
type simCondition struct {
	metrics []simMetric
	failed  float64 // chance a reading fails, leaving its round without a pair
	// censorZ censors a reading of a lower-is-better cell that lies more than
	// censorZ of its spread above the median (0: never): the run records its
	// bound, the probe's limit, as "≥ bound".
	censorZ float64
}

// simPlannedRun runs the whole procedure as a two-builds run does it with
// several conditions: each condition's block measures its rounds, Plan
// asked about that block's cells alone (Decide across them at each look),
// then the verdict is decided once across every condition's cells (one
// Benjamini–Hochberg family). It returns each cell's verdict and the
// rounds measured in all.
func simPlannedRun(rng *rand.Rand, conds []simCondition, maxRounds int) ([]Result, int) {
	var all []Cell
	total := 0
	for ci, c := range conds {
		cells := make([]Cell, len(c.metrics))
		cvs := make([]float64, len(c.metrics))
		for i, m := range c.metrics {
			cells[i] = Cell{Transport: "tw", Condition: fmt.Sprint("c", ci), Instrument: m.name, Metric: "value", Better: m.better}
			cvs[i] = m.cvLo + (m.cvHi-m.cvLo)*rng.Float64()
		}
		period := 20 + 60*rng.Float64()
		phase := 2 * math.Pi * rng.Float64()
		// read gives one reading at time t, whether it failed, and whether it is a bound.
		read := func(i, t int) (v float64, failed, censored bool) {
			if rng.Float64() < c.failed {
				return 0, true, false
			}
			z := cvs[i] * rng.NormFloat64()
			worse := math.Exp(z)
			if rng.Float64() < 0.05 {
				worse *= 0.85
			}
			drift := 1 + 0.10*math.Sin(2*math.Pi*float64(t)/period+phase)
			if c.metrics[i].better != results.BetterLower {
				return 100 * drift * worse, false, false
			}
			if c.censorZ > 0 && -z > c.censorZ*cvs[i] {
				return 100 * drift * math.Exp(c.censorZ*cvs[i]), false, true // the probe's limit
			}
			return 100 * drift / worse, false, false
		}
		rounds := 0
		var rs []Result
		for {
			more := Plan(rs, rounds, maxRounds, Options{})
			if more == 0 {
				break
			}
			for range more {
				rounds++
				tA, tB := 2*rounds, 2*rounds+1
				if rounds%2 == 0 {
					tA, tB = tB, tA
				}
				for i := range cells {
					a, aFailed, aCens := read(i, tA)
					b, bFailed, bCens := read(i, tB)
					if aFailed || bFailed {
						continue
					}
					cells[i].Pairs = append(cells[i].Pairs, Pair{Round: rounds, A: a, B: b, ACensored: aCens, BCensored: bCens})
				}
			}
			rs = Decide(cells, Options{})
		}
		total += rounds
		all = append(all, cells...)
	}
	return Decide(all, Options{}), total
}

// TestAAFalseAlarmsPlannedPerCondition simulates 2,000 A/A runs shaped
// like a two-builds run of two conditions at the default cap (20 rounds):
// each condition's three cells planned as one block, then one verdict
// across all six; 3 % of readings fail (their round has no pair) and one
// cell per condition is a tail latency whose slowest readings (about 3 %)
// are censored at the probe's limit. The share of runs that end with any
// cell slower stays within the stated 1 %, and is the figure
// docs/builds.md states.
func TestAAFalseAlarmsPlannedPerCondition(t *testing.T) {
	const runs = 2000
	tail := []simMetric{
		{"iperf3-1", results.BetterHigher, 0.05, 0.10},
		{"tcp_rr", results.BetterHigher, 0.03, 0.03},
		{"rrul p99", results.BetterLower, 0.10, 0.10},
	}
	cond := simCondition{metrics: tail, failed: 0.03, censorZ: 1.9}
	rng := rand.New(rand.NewPCG(2029, 31))
	slower, rounds, cells, bounded, unpaired := 0, 0, 0, 0, 0
	for range runs {
		rs, n := simPlannedRun(rng, []simCondition{cond, cond}, 20)
		rounds += n
		any := false
		for _, r := range rs {
			cells++
			bounded += r.Bounded
			unpaired += r.Censored
			any = any || r.Verdict == Slower
		}
		if any {
			slower++
		}
	}
	rate := float64(slower) / runs
	t.Logf("A/A, 2 conditions × 3 cells, cap 20, 3 %% failed readings, censored tails: %d of %d runs slower (%.2f %%); %.1f rounds per run; %d pairs at a bound, %d left out",
		slower, runs, 100*rate, float64(rounds)/runs, bounded, unpaired)
	if bounded == 0 || unpaired == 0 {
		t.Errorf("the censored cells made %d bounded and %d left-out pairs: the simulation censors nothing", bounded, unpaired)
	}
	if rate > StatedFalseAlarms {
		t.Errorf("%d of %d runs slower (%.2f %%), above the stated %.0f %%", slower, runs, 100*rate, 100*StatedFalseAlarms)
	}
	wantStated(t, fmt.Sprintf("two conditions planned apart, 3 cells each, cap 20, 3 %% of readings failed, censored tails: %d of %s runs (%.2f %%, %.1f rounds per run)",
		slower, thousands(runs), 100*rate, float64(rounds)/runs))
}
