package verdict

import (
	"fmt"

	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// ConfirmPairs is the smallest confirmation batch: the last pairs of a
// cell, which must show a change again on their own. Six is the fewest
// pairs whose signed-rank test can reach p < 0.05 (all six of one sign:
// two-sided 2/64); a cell therefore needs 2·ConfirmPairs pairs before it
// can be called slower or faster.
const ConfirmPairs = 6

// ConfirmBatch is the confirmation batch of a cell of n pairs: its later
// half, at least ConfirmPairs. A batch of fixed size would bound the
// rule's power whatever n: six pairs show a change in four runs of five
// only when it is about 1.2 standard deviations of one pair's change, so
// many short rounds could never see less than that. Half and half keeps
// the two tests alike in power, and each grows with n.
func ConfirmBatch(n int) int {
	return max(ConfirmPairs, n/2)
}

// confirmed says whether a change in the direction up (log ratio > 0)
// shows on its own both in the pairs before the last ConfirmBatch (two-
// sided p < Alpha, estimate the same way) and in the last ConfirmBatch
// (one-sided p < Alpha that way).
func confirmed(d []float64, up bool, o Options) (bool, string) {
	if len(d) < 2*ConfirmPairs {
		return false, fmt.Sprintf("needs %d pairs, %d before a fresh batch of %d", 2*ConfirmPairs, ConfirmPairs, ConfirmPairs)
	}
	k := ConfirmBatch(len(d))
	first, last := d[:len(d)-k], d[len(d)-k:]
	s := stats.WilcoxonSignedRank(first)
	if s.P() >= o.Alpha || (stats.HodgesLehmann(first) > 0) != up {
		return false, fmt.Sprintf("the first %d pairs alone: p %.2g", len(first), s.P())
	}
	c := stats.WilcoxonSignedRank(last)
	p := c.PLess
	if up {
		p = c.PMore
	}
	if p >= o.Alpha {
		return false, fmt.Sprintf("the last %d pairs alone: p %.2g", len(last), p)
	}
	return true, ""
}
