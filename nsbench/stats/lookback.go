package stats

import "math"

// Lookback is the lookback z-score change-point rule (the one conbench
// uses on its run history): the newest value is a change point when it
// lies more than Z robust standard deviations from the median of the K
// values before it. The robust standard deviation is the baseline's
// median absolute deviation × 1.4826 (the normal's σ for normal data),
// floored at Floor × |median| so that a flat baseline (identical values)
// does not flag a change of a fraction of a percent. With fewer than Min
// earlier values there is no baseline, and no flag.
type Lookback struct {
	K     int     // the earlier values the baseline takes (the newest K of them)
	Min   int     // the fewest earlier values a test needs
	Z     float64 // the threshold, in robust standard deviations
	Floor float64 // the least spread, relative to the baseline's median
}

// DefaultLookback is the report's rule: the previous 10 runs (at least 5),
// z > 5, spread at least 1 % of the median. On independent normal noise
// it flags 0.94 % of newest runs (TestLookbackFalseFlags, seeded), and an
// 8σ step 95 % of the time.
var DefaultLookback = Lookback{K: 10, Min: 5, Z: 5, Floor: 0.01}

// LookbackResult is one test of a newest value against its baseline.
type LookbackResult struct {
	Tested   bool    // the baseline had at least Min values
	Baseline int     // how many earlier values it took
	Center   float64 // the baseline's median
	Spread   float64 // the robust standard deviation used (after the floor)
	Z        float64 // (newest − Center) / Spread
	Flagged  bool    // |Z| > the rule's Z
}

// madScale makes the median absolute deviation an estimate of σ for
// normal data (1 / Φ⁻¹(3/4)).
const madScale = 1.4826

// Test tests newest against the last K values of earlier (oldest first).
func (l Lookback) Test(earlier []float64, newest float64) LookbackResult {
	if len(earlier) > l.K {
		earlier = earlier[len(earlier)-l.K:]
	}
	r := LookbackResult{Baseline: len(earlier)}
	if len(earlier) < l.Min || len(earlier) == 0 {
		return r
	}
	r.Tested = true
	r.Center = Median(earlier)
	dev := make([]float64, len(earlier))
	for i, x := range earlier {
		dev[i] = math.Abs(x - r.Center)
	}
	r.Spread = max(madScale*Median(dev), l.Floor*math.Abs(r.Center))
	if r.Spread == 0 { // a baseline of zeros: any other value is a change
		if newest != r.Center {
			r.Z = math.Copysign(math.Inf(1), newest-r.Center)
		}
	} else {
		r.Z = (newest - r.Center) / r.Spread
	}
	r.Flagged = math.Abs(r.Z) > l.Z
	return r
}
