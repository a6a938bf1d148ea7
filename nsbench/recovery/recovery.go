// Package recovery measures how a tunnel comes back after a fault (a
// restart of one of its pieces, a link down for a while): a prober sends
// a small request through the tunnel every Interval and records when each
// was answered, and Recover reads from that timeline how long after the
// fault's end traffic crossed again and what was lost meanwhile.
//
// A recovery that did not happen within the bound is a bound ("≥ bound"),
// never a number: Result.AtLeast says so.
package recovery

import (
	"fmt"
	"time"
)

// Interval is the default time between two requests: fine enough to time
// a recovery to about a hundredth of a second, light enough (100 small
// requests a second) not to load the tunnel it measures.
const Interval = 10 * time.Millisecond

// Request is one request: when it was sent and, when it was answered, when
// the answer arrived, both since the prober started.
type Request struct {
	Sent     time.Duration `json:"sent_ns"`
	Answered time.Duration `json:"answered_ns,omitempty"` // 0: never answered
}

// OK reports whether p was answered.
func (p Request) OK() bool { return p.Answered > 0 }

// Timeline is what a prober recorded: every request in the order sent,
// and how many connections it opened.
type Timeline struct {
	// StartUnixNs is when the prober started, on its host's clock: a
	// fault timed on the same host's clock is placed on the timeline by
	// it.
	StartUnixNs int64         `json:"start_unix_ns"`
	Interval    time.Duration `json:"interval_ns"`
	Requests    []Request     `json:"requests"`
	Dials       int           `json:"dials"` // connections opened
	// Stream is the stream beside the requests (ProbeWithStream); nil
	// without one.
	Stream *Stream `json:"stream,omitempty"`
}

// Fault is when the fault was made and when it ended (the piece started
// again, the link up again), on the prober's clock.
type Fault struct {
	Start, End time.Duration
}

// Result is one fault's recovery.
type Result struct {
	// Seconds is from the fault's end to the first answer that arrived
	// after it; with AtLeast, no answer arrived within the bound and
	// Seconds is the bound.
	Seconds float64
	AtLeast bool
	// Lost are the requests sent from the fault's start until traffic
	// crossed again that were never answered; Sent all requests sent in
	// that span.
	Lost, Sent int
	// Interrupted reports whether any request sent during the fault went
	// unanswered: a fault the tunnel rode through has Lost 0.
	Interrupted bool
}

// Recover reads one fault's recovery from t: the first answer that
// arrived at or after f.End, within bound of it. An answer arriving after
// the end counts even for a request sent before it (a request held in a
// queue across the fault): it crossed the tunnel after the fault.
func Recover(t Timeline, f Fault, bound time.Duration) (Result, error) {
	if f.End < f.Start {
		return Result{}, fmt.Errorf("recovery: fault ends (%v) before it starts (%v)", f.End, f.Start)
	}
	if bound <= 0 {
		return Result{}, fmt.Errorf("recovery: bound %v: want a positive time", bound)
	}
	last := time.Duration(0)
	if n := len(t.Requests); n > 0 {
		last = t.Requests[n-1].Sent
	}
	if last < f.End+bound && !answeredAfter(t, f.End) {
		return Result{}, fmt.Errorf("recovery: the timeline ends %v after the fault, short of the %v bound, without an answer", last-f.End, bound)
	}
	first := time.Duration(-1)
	for _, p := range t.Requests {
		if p.OK() && p.Answered >= f.End && (first < 0 || p.Answered < first) {
			first = p.Answered
		}
	}
	r := Result{}
	until := f.End + bound
	if first >= 0 && first-f.End <= bound {
		r.Seconds = (first - f.End).Seconds()
		until = first
	} else {
		r.Seconds, r.AtLeast = bound.Seconds(), true
	}
	for _, p := range t.Requests {
		if p.Sent < f.Start || p.Sent > until {
			continue
		}
		r.Sent++
		if !p.OK() || p.Answered > f.End+bound {
			r.Lost++
			if p.Sent <= f.End {
				r.Interrupted = true
			}
		}
	}
	if r.AtLeast {
		r.Interrupted = true
	}
	return r, nil
}

// answeredAfter reports whether some request was answered at or after at.
func answeredAfter(t Timeline, at time.Duration) bool {
	for _, p := range t.Requests {
		if p.OK() && p.Answered >= at {
			return true
		}
	}
	return false
}

// Bin is one slice of a timeline for a chart: the requests sent in it
// and, of those, the ones answered.
type Bin struct {
	Start              time.Duration
	Sent, AnsweredSent int
}

// Bins cuts t into slices of width, from the first request to the last:
// the chart of requests answered over time around a fault.
func Bins(t Timeline, width time.Duration) []Bin {
	if width <= 0 || len(t.Requests) == 0 {
		return nil
	}
	n := int(t.Requests[len(t.Requests)-1].Sent/width) + 1
	bins := make([]Bin, n)
	for i := range bins {
		bins[i].Start = time.Duration(i) * width
	}
	for _, p := range t.Requests {
		b := &bins[p.Sent/width]
		b.Sent++
		if p.OK() {
			b.AnsweredSent++
		}
	}
	return bins
}
