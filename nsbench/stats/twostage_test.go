package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// component is one mode of a simulated cell: a lognormal around median
// with log-spread sigma.
type component struct {
	weight, median, sigma float64
}

// hostDist is a cell's distribution of runs as a noisy 2-vCPU host makes
// them: one skewed mode, or a fast mode with a slow one beside it (runs
// that met other work).
type hostDist struct {
	name  string
	modes []component
}

func (d hostDist) draw(rng *rand.Rand) float64 {
	u := rng.Float64()
	for _, c := range d.modes {
		if u -= c.weight; u < 0 || c == d.modes[len(d.modes)-1] {
			return c.median * math.Exp(c.sigma*rng.NormFloat64())
		}
	}
	panic("unreachable")
}

func (d hostDist) cdf(x float64) float64 {
	var p float64
	for _, c := range d.modes {
		p += c.weight * 0.5 * math.Erfc(-math.Log(x/c.median)/(c.sigma*math.Sqrt2))
	}
	return p
}

// trueMedian solves cdf(x) = ½ by bisection.
func (d hostDist) trueMedian() float64 {
	lo, hi := 1e-9, 1e9
	for range 200 {
		mid := math.Sqrt(lo * hi)
		if d.cdf(mid) < 0.5 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Sqrt(lo * hi)
}

var hostDists = []hostDist{
	{"lognormal 1 %", []component{{1, 100, 0.01}}},
	{"lognormal 3 %", []component{{1, 100, 0.03}}},
	{"lognormal 8 %", []component{{1, 100, 0.08}}},
	{"lognormal 20 % (latency tail)", []component{{1, 100, 0.20}}},
	{"bimodal 80/20, slow mode −15 %", []component{{0.8, 100, 0.02}, {0.2, 85, 0.03}}},
	{"bimodal 65/35, slow mode −25 %", []component{{0.65, 100, 0.02}, {0.35, 75, 0.05}}},
	{"bimodal 55/45, slow mode −10 %", []component{{0.55, 100, 0.015}, {0.45, 90, 0.015}}},
	{"bimodal 90/10, slow mode −50 %", []component{{0.9, 100, 0.03}, {0.1, 50, 0.1}}},
	{"bimodal 50/50, slow mode −8 %", []component{{0.5, 100, 0.015}, {0.5, 92, 0.015}}},
	{"bimodal 60/40, slow mode −6 %", []component{{0.6, 100, 0.01}, {0.4, 94, 0.02}}},
}

// stopWhenNarrow is the rule --runs auto had: from 6 runs on, stop as soon
// as the interval is within the precision, at most maxRuns.
func stopWhenNarrow(draw func() float64, precision float64, pilot, maxRuns int) []float64 {
	var xs []float64
	for len(xs) < maxRuns {
		xs = append(xs, draw())
		if len(xs) >= pilot && WithinPrecision(xs, precision) {
			break
		}
	}
	return xs
}

// twoStage is --runs auto now: a pilot, n fixed from it, every run kept.
func twoStage(draw func() float64, precision float64, pilot, maxRuns int) []float64 {
	var xs []float64
	for len(xs) < pilot {
		xs = append(xs, draw())
	}
	for n := TwoStageRuns(xs, precision, maxRuns); len(xs) < n; {
		xs = append(xs, draw())
	}
	return xs
}

// TestTwoStageCoverage simulates cells whose runs come from the skewed and
// bimodal distributions above, at precisions of 2, 3 and 5 % with at most
// 20 runs, and checks how often the reported 95 % interval of the median
// covers the true median. The two-stage rule must keep its promise, the
// interval's stated 95 %: over all cells, and for every distribution
// within three standard errors of the simulation (1.7 points for 1500
// cells). The stop-when-narrow rule it replaced
// must do worse where it matters: on its worst distribution (two modes of
// near-equal weight, a host with and without other work) it covers less
// than 93 % and less than the two-stage rule's worst. (Where both reach the
// cap of 20 runs they are the same rule.) docs/results.md states the figures
// of this fixed seed (--runs auto); the test checks it states them.
func TestTwoStageCoverage(t *testing.T) {
	const pilot, maxRuns, perDist = 6, 20, 1500
	const statedLevel = 0.95
	precisions := []float64{0.02, 0.03, 0.05}
	rng := rand.New(rand.NewPCG(24, 2025))
	covered := func(xs []float64, truth float64) bool {
		ci := MedianCI(xs, 0.95)
		return ci.Reached && ci.Low <= truth && truth <= ci.High
	}
	var cells, hitNew, hitOld, runsNew, runsOld int
	worstNew, worstOld := 1.0, 1.0
	for _, d := range hostDists {
		truth := d.trueMedian()
		draw := func() float64 { return d.draw(rng) }
		var dNew, dOld int
		for i := range perDist {
			p := precisions[i%len(precisions)]
			xs := twoStage(draw, p, pilot, maxRuns)
			ys := stopWhenNarrow(draw, p, pilot, maxRuns)
			runsNew += len(xs)
			runsOld += len(ys)
			if covered(xs, truth) {
				dNew++
			}
			if covered(ys, truth) {
				dOld++
			}
		}
		cells += perDist
		hitNew += dNew
		hitOld += dOld
		covNew, covOld := float64(dNew)/perDist, float64(dOld)/perDist
		worstNew, worstOld = min(worstNew, covNew), min(worstOld, covOld)
		t.Logf("%-32s true median %6.2f: two-stage covers %5.1f %%, stop-when-narrow %5.1f %%",
			d.name, truth, 100*covNew, 100*covOld)
		if least := statedLevel - 3*math.Sqrt(statedLevel*(1-statedLevel)/perDist); covNew < least {
			t.Errorf("%s: the two-stage interval covered the true median in %d of %d cells, want ≥ %.1f %% (95 %% less the simulation's error)",
				d.name, dNew, perDist, 100*least)
		}
	}
	newCov, oldCov := float64(hitNew)/float64(cells), float64(hitOld)/float64(cells)
	t.Logf("%d cells: two-stage covers %.1f %% (worst %.1f %%, %.1f runs per cell), stop-when-narrow %.1f %% (worst %.1f %%, %.1f runs per cell)",
		cells, 100*newCov, 100*worstNew, float64(runsNew)/float64(cells), 100*oldCov, 100*worstOld, float64(runsOld)/float64(cells))
	if cells < 2000 {
		t.Fatalf("%d cells simulated, want ≥ 2000", cells)
	}
	if newCov < statedLevel {
		t.Errorf("two-stage coverage %.3f, want ≥ the stated %.2f", newCov, statedLevel)
	}
	const statedIn = "../../docs/results.md"
	page, err := os.ReadFile(statedIn)
	if err != nil {
		t.Fatal(err)
	}
	stated := strings.Join(strings.Fields(string(page)), " ")
	for _, want := range []string{
		fmt.Sprintf("simulates %s cells", thousands(cells)),
		fmt.Sprintf("true median in %.1f %% of cells (%.1f %% for the worst distribution), against %.1f %% (%.1f %% for",
			100*newCov, 100*worstNew, 100*oldCov, 100*worstOld),
		fmt.Sprintf("(%.1f and %.1f runs per cell)", float64(runsNew)/float64(cells), float64(runsOld)/float64(cells)),
	} {
		if !strings.Contains(stated, want) {
			t.Errorf("%s does not state this seed's figures: it lacks %q", statedIn, want)
		}
	}
	if oldCov >= newCov {
		t.Errorf("stop-when-narrow covers %.3f of all cells, not below the two-stage rule's %.3f", oldCov, newCov)
	}
	if worstOld >= 0.93 || worstOld >= worstNew {
		t.Errorf("stop-when-narrow's worst coverage %.3f: want below 0.93 and below the two-stage rule's worst %.3f", worstOld, worstNew)
	}
}

// thousands writes n with a comma between thousands, as the docs do.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func TestTwoStageRuns(t *testing.T) {
	tight := []float64{100, 101, 99, 100, 102, 98} // s ≈ 1.41 % of the median
	// π/2 · (2.5706 · 1.4142 / 5)² = 0.83 → the pilot would suffice;
	// every cell gets two runs beyond it.
	if n := TwoStageRuns(tight, 0.05, 20); n != 8 {
		t.Errorf("tight pilot at 5 %%: n = %d, want 8", n)
	}
	if n := TwoStageRuns(tight, 0.05, 7); n != 7 {
		t.Errorf("tight pilot at 5 %%, at most 7: n = %d, want 7", n)
	}
	// At 1 %: π/2 · (2.5706 · 1.4142 / 1)² = 20.76 → 21, capped at 20.
	if n := TwoStageRuns(tight, 0.01, 20); n != 20 {
		t.Errorf("tight pilot at 1 %%: n = %d, want the cap 20", n)
	}
	// At 1.5 %: π/2 · (2.5706 · 1.4142 / 1.5)² = 9.23 → 10.
	if n := TwoStageRuns(tight, 0.015, 20); n != 10 {
		t.Errorf("tight pilot at 1.5 %%: n = %d, want 10", n)
	}
	if n := TwoStageRuns([]float64{5}, 0.05, 20); n != 1 {
		t.Errorf("one value: n = %d, want 1 (no spread to size from)", n)
	}
	if n := TwoStageRuns([]float64{-1, 0, 0, 1, 0, 0}, 0.05, 20); n != 20 {
		t.Errorf("zero median: n = %d, want the cap", n)
	}
}
