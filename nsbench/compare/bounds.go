package compare

import (
	"fmt"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// A censored reading (a latency probe that outlasted its test) is a lower
// bound, not a value. Mann-Whitney ranks values and a change divides
// medians: a bound ranked or divided as a value can invert either, so a
// row with one on either side gets neither. It says how many, and the
// medians that are bounds read "≥".

// notTested is the verdict of a row with a lower bound.
const notTested = "not tested"

// boundsLegend explains the rows that are not tested.
const boundsLegend = "≥, not tested: a censored run (a probe still unanswered when its test ended) holds a lower bound, not a value; " +
	"a rank test and a % change would treat it as exact, so its row gets neither."

// Side is one document's bounds in a row.
type Side struct {
	Runs        int  // readings that are lower bounds
	MedianBound bool // the median is one too
}

// mark is the prefix of the side's median.
func (s Side) mark() string {
	if s.MedianBound {
		return "≥ "
	}
	return ""
}

// Bounds are a row's lower bounds, old and new.
type Bounds struct{ Old, New Side }

func boundsOf(old, cur []results.Reading) Bounds {
	of := func(rs []results.Reading) Side {
		return Side{Runs: results.Censored(rs), MedianBound: results.MedianAtLeast(rs)}
	}
	return Bounds{Old: of(old), New: of(cur)}
}

func (b Bounds) Any() bool { return b.Old.Runs+b.New.Runs > 0 }

// String says which runs are bounds, for the row's test column.
func (b Bounds) String() string {
	return fmt.Sprintf("lower bounds: %d+%d runs censored", b.Old.Runs, b.New.Runs)
}
