package verdict

import (
	"math"

	moremath "github.com/aclements/go-moremath/stats"
)

// FirstLook is the fewest rounds a run measures before its first look: the
// first batch and its confirmation batch.
const FirstLook = 2 * ConfirmPairs

// Plan is the sequential rule: how many more rounds the run should
// measure, given the results so far, the rounds done and the cap. 0 means
// stop. Its looks come at FirstLook rounds and then every ConfirmPairs
// rounds: a run with fewer than FirstLook rounds measures up to FirstLook;
// after that, while any cell is undecided (which includes a change not yet
// confirmed by a batch of its own), it measures another ConfirmPairs
// rounds, never past maxRounds. Each look can turn an unchanged cell
// "slower" only if the pairs before its last ConfirmPairs and the last
// ConfirmPairs both show it on their own, so the false alarms grow slowly
// with the number of looks; TestAAFalseAlarms measures the rate of the
// whole procedure (Decide at every look, Plan between them, Decide's
// verdict at the stop) and TestPower its power.
func Plan(rs []Result, rounds, maxRounds int, o Options) int {
	left := maxRounds - rounds
	if left <= 0 {
		return 0
	}
	if rounds < FirstLook {
		return min(FirstLook-rounds, left)
	}
	for _, r := range rs {
		if r.Verdict == Undecided {
			return min(ConfirmPairs, left)
		}
	}
	return 0
}

// power is the power the MDE is computed for.
const power = 0.8

// mde is the smallest relative change the verdict's three tests would each
// detect with 80 % power at these pair counts and this spread, by the
// normal-theory formula δ = (t₁₋ₐ + t₀.₈)·s / √(n·3/π) with Student's t
// at n−1 degrees of freedom and 3/π the signed-rank test's efficiency
// against the t-test for normal differences: for all pairs and for the
// first part (two-sided Alpha), and for the confirmation batch (one-sided
// Alpha); the largest of the three, as exp(δ) − 1. It is approximate, and
// optimistic for the six-pair batch, whose exact test is coarser than the
// formula assumes (TestPower measures the rule itself). NaN below
// FirstLook pairs, where no change can be called.
func mde(d []float64, o Options) float64 {
	n := len(d)
	if n < FirstLook {
		return math.NaN()
	}
	var sum, ss float64
	for _, x := range d {
		sum += x
	}
	mean := sum / float64(n)
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	s := math.Sqrt(ss / float64(n-1))
	delta := func(m int, tail float64) float64 {
		q := moremath.InvCDF(moremath.TDist{V: float64(m - 1)})
		return (q(1-tail) + q(power)) * s / math.Sqrt(float64(m)*3/math.Pi)
	}
	worst := max(delta(n, o.Alpha/2), delta(n-ConfirmPairs, o.Alpha/2), delta(ConfirmPairs, o.Alpha))
	return math.Expm1(worst)
}
