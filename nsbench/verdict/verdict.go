// Package verdict decides, per cell, whether build B of a transport is
// slower or faster than build A from paired rounds.
//
// STUB until h-verdict lands: Decide returns Undecided with NaNs and Plan
// returns 0. Only the names and shapes of the real package are here, so
// the code around it (nsbench, cmd/twnsbench) builds and is tested
// against them.
package verdict

import "math"

// Pair is one round's A and B samples of one cell.
type Pair struct {
	Round                int
	A, B                 float64
	ACensored, BCensored bool
}

// Cell is one metric of one transport × condition × instrument, with its
// pairs.
type Cell struct {
	Transport, Condition, Instrument, Metric string
	Unit                                     string
	Better                                   string
	Pairs                                    []Pair
}

// Kind is a verdict.
type Kind string

// The verdicts.
const (
	Slower    Kind = "slower"
	Faster    Kind = "faster"
	NoChange  Kind = "no change"
	Undecided Kind = "undecided"
)

// Options are the verdict's thresholds.
type Options struct {
	MinEffect float64
	Alpha     float64
}

// Result is one cell's verdict.
type Result struct {
	Cell
	N, Censored              int
	Ratio, Lo, Hi, P, Q, MDE float64
	Verdict                  Kind
	Reason                   string
}

// Decide gives every cell its verdict (stub: undecided).
func Decide(cells []Cell, o Options) []Result {
	out := make([]Result, 0, len(cells))
	nan := math.NaN()
	for _, c := range cells {
		out = append(out, Result{Cell: c, N: len(c.Pairs), Ratio: nan, Lo: nan, Hi: nan, P: nan, Q: nan, MDE: nan,
			Verdict: Undecided, Reason: "stub until h-verdict lands"})
	}
	return out
}

// Plan says how many more rounds to measure; 0 = stop (stub: 0).
func Plan(rs []Result, rounds, maxRounds int, o Options) int { return 0 }
