package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/perf/benchmath"
)

// TestAgreesWithBenchmath: the statistics are benchstat's
// (golang.org/x/perf/benchmath) except where benchmath has no answer: for
// fewer than 6 runs its median interval at 95 % is (−∞, +∞) with a warning,
// while twnsbench reports the honest [min, max] with the level it really
// has (0.75 for the reference's 3 runs). Elsewhere, up to 30 runs, the two
// agree exactly; above 30 go-moremath approximates the level (and
// twnsbench does not: TestMedianCIOrderStatistics). The Mann-Whitney
// p-values agree everywhere.
func TestAgreesWithBenchmath(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	th := &benchmath.DefaultThresholds
	for n := 2; n <= 30; n++ {
		for trial := range 20 {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = math.Round(rng.NormFloat64()*1000) / 10 // some ties
			}
			ours := MedianCI(xs, 0.95)
			theirs := benchmath.AssumeNothing.Summary(benchmath.NewSample(append([]float64(nil), xs...), th), 0.95)
			if math.Abs(theirs.Center-Median(xs)) > 1e-9*math.Max(1, math.Abs(theirs.Center)) {
				t.Fatalf("n=%d trial %d: median %v, benchmath %v", n, trial, Median(xs), theirs.Center)
			}
			if math.IsInf(theirs.Lo, 0) || math.IsInf(theirs.Hi, 0) {
				if ours.Reached || ours.Low != Min(xs) || ours.High != Max(xs) || ours.Level >= 0.95 {
					t.Fatalf("n=%d: benchmath has no 95 %% interval; ours %+v, want [min, max] below 95 %%", n, ours)
				}
				continue
			}
			if !ours.Reached || ours.Low != theirs.Lo || ours.High != theirs.Hi || math.Abs(ours.Level-theirs.Confidence) > 1e-9 {
				t.Fatalf("n=%d trial %d: ours [%v, %v] at %v, benchmath [%v, %v] at %v",
					n, trial, ours.Low, ours.High, ours.Level, theirs.Lo, theirs.Hi, theirs.Confidence)
			}
		}
	}
	for n1 := 2; n1 <= 12; n1++ {
		for n2 := 2; n2 <= 12; n2 += 3 {
			for trial := range 10 {
				xs, ys := make([]float64, n1), make([]float64, n2)
				for i := range xs {
					xs[i] = math.Round(rng.NormFloat64() * 4)
				}
				for i := range ys {
					ys[i] = math.Round(rng.NormFloat64()*4 + 2)
				}
				_, p := MannWhitney(xs, ys)
				cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(append([]float64(nil), xs...), th),
					benchmath.NewSample(append([]float64(nil), ys...), th))
				if math.Abs(p-math.Min(1, cmp.P)) > 1e-6 { // benchmath does not cap p at 1
					t.Errorf("n=%d+%d trial %d: p %v, benchmath %v (%v vs %v)", n1, n2, trial, p, cmp.P, xs, ys)
				}
			}
		}
	}
}
