package impair

import (
	"fmt"
	"time"
)

// A set-up under a narrow hop that cannot come up, judged by progress: an
// SSH key exchange whose packets the hop drops silently never ends, and
// without this judgement it costs the whole readiness wait (a minute) per
// row. JudgeSetUp is pure; the orchestrator reads the hop's counts while
// the set-up runs and gives up when it says so.

// SetUpStallAfter is how long a set-up under a narrow hop runs before its
// progress is judged, and SetUpStallWindow how recent the hop's last drop
// of its packets must be for it to count as still stuck. TCP retransmits a
// dropped segment after 0.2, 0.6, 1.4, 3.0, 6.2, 12.6 s (RTO from 200 ms,
// doubling), so a connection still stuck at 10 s has lost a retransmit
// at 6.2 s, inside the window; one that learnt the path MTU (ICMP, or
// packetization-layer probing) has stopped losing them and keeps its own
// bound.
const (
	SetUpStallAfter  = 10 * time.Second
	SetUpStallWindow = 8 * time.Second
)

// NarrowReading is the narrow hop's cumulative counts At a time since a
// set-up began.
type NarrowReading struct {
	At     time.Duration
	Counts NarrowCounts
}

// SetUpStallError is a set-up the narrow hop stalled: it had not come up
// After this long while the hop went on dropping its packets as too big.
type SetUpStallError struct {
	After    time.Duration
	TooBig   uint64 // packets the hop dropped as too big since the set-up began
	Recent   uint64 // of those, in the last SetUpStallWindow
	ICMPSent uint64 // "fragmentation needed" sent back since it began
}

func (e *SetUpStallError) Error() string {
	return fmt.Sprintf("stalled at the narrow hop: not up after %.1f s while the hop dropped %d packets too big (%d in the last %.0f s) and sent %d ICMP",
		e.After.Seconds(), e.TooBig, e.Recent, SetUpStallWindow.Seconds(), e.ICMPSent)
}

// JudgeSetUp judges a set-up that is not up yet from the hop's readings
// since it began (the first taken at its start, in time order): stalled
// (non-nil) once it has run SetUpStallAfter and the hop dropped some of its
// packets as too big within the last SetUpStallWindow. A set-up that never
// met the hop, or stopped meeting it, is not judged here: it is slow for
// another reason, and its own bound applies.
func JudgeSetUp(rs []NarrowReading) *SetUpStallError {
	if len(rs) < 2 {
		return nil
	}
	first, last := rs[0], rs[len(rs)-1]
	if last.At-first.At < SetUpStallAfter {
		return nil
	}
	// The latest reading at least a window old: drops since it are recent.
	ref := first
	for _, r := range rs {
		if r.At > last.At-SetUpStallWindow {
			break
		}
		ref = r
	}
	recent := sub(last.Counts.TooBig, ref.Counts.TooBig)
	if recent == 0 {
		return nil
	}
	return &SetUpStallError{After: last.At - first.At, TooBig: sub(last.Counts.TooBig, first.Counts.TooBig),
		Recent: recent, ICMPSent: sub(last.Counts.ICMPSent, first.Counts.ICMPSent)}
}
