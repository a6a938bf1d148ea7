package fanout

import (
	"fmt"
	"math"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// intervalSec is the clients' iperf3 reporting interval (-i): iperf3's
// shortest, so that reading whole intervals inside the common window
// loses at most a tenth of a second at each end.
const intervalSec = "0.1"

// clientRun is one client's iperf3 as the harness saw it: its -J output
// and the harness's clock just before it was started and just after it
// exited.
type clientRun struct {
	launched, exited time.Time
	out              []byte
	err              error
}

// window is the clients' rates read over the window in which every
// measured client was sending, not each over its own.
type window struct {
	bps        []float64 // per client; meaningful where err is nil
	err        []error   // per client: its iperf3 failed, or nothing of it lies in the window
	overlapSec float64   // the common window's length
	placed     bool      // some client's test was placed on the clock
}

// commonWindow places every client's test on the harness's clock and
// reads each client's rate over the window all of them were surely
// sending. iperf3 states its test's start only to the second
// (start.timestamp.timesecs), so a client's test start is bounded
// instead: no earlier than its launch, no later than its exit less its
// test's length (its last interval's end). The window runs from the
// latest possible start of any client to the earliest possible end of
// any; a client's rate is its bytes over its whole intervals that lie
// inside the window wherever in its bounds its test began.
func commonWindow(runs []clientRun) window {
	type placed struct {
		ivs                []instrument.IPerf3Interval
		early, late, ended float64 // start bounds and earliest end, seconds on one clock
	}
	w := window{bps: make([]float64, len(runs)), err: make([]error, len(runs))}
	ps := make([]*placed, len(runs))
	var t0 time.Time
	for _, r := range runs {
		if r.err == nil && (t0.IsZero() || r.launched.Before(t0)) {
			t0 = r.launched
		}
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	for i, r := range runs {
		if r.err != nil {
			w.err[i] = r.err
			continue
		}
		ivs, err := instrument.IPerf3ReceivedIntervals(r.out)
		if err != nil {
			w.err[i] = err
			continue
		}
		length := ivs[len(ivs)-1].End
		p := &placed{ivs: ivs, early: r.launched.Sub(t0).Seconds()}
		// A test cannot outlast its process: clock steps aside, late ≥ early.
		p.late = max(p.early, r.exited.Sub(t0).Seconds()-length)
		p.ended = p.early + length
		ps[i] = p
		lo, hi = max(lo, p.late), min(hi, p.ended)
	}
	w.placed = !math.IsInf(lo, 0)
	if !w.placed || hi <= lo {
		return w // no common window: record says so
	}
	w.overlapSec = hi - lo
	for i, p := range ps {
		if p == nil {
			continue
		}
		var bytes int64
		var sec float64
		for _, iv := range p.ivs {
			if p.early+iv.Start >= lo && p.late+iv.End <= hi {
				bytes += iv.Bytes
				sec += iv.End - iv.Start
			}
		}
		if sec == 0 {
			w.err[i] = fmt.Errorf("no whole interval inside the clients' common %.2f s", w.overlapSec)
			continue
		}
		w.bps[i] = float64(bytes) * 8 / sec
	}
	return w
}

// record puts w into row: each client's rate over the common window, or
// why it has none, and the window's length. A window shorter than half
// the duration asked for is no concurrent measurement: the row says so
// (Error) and gives no rates, so no aggregate is read from it.
func (w window) record(row *results.ClientsRow, roles []string, d time.Duration) {
	if w.placed {
		overlap := math.Round(w.overlapSec*100) / 100
		row.OverlapSec = &overlap
	}
	for i, err := range w.err {
		if err != nil {
			row.Failed = append(row.Failed, roles[i]+": "+err.Error())
			continue
		}
		row.PerClientMbps = append(row.PerClientMbps, w.bps[i]/1e6)
	}
	if w.placed && w.overlapSec < d.Seconds()/2 {
		row.Error = fmt.Sprintf("the clients' streams overlapped only %.2f s of their %g s, less than half: no concurrent aggregate", w.overlapSec, d.Seconds())
		row.PerClientMbps = nil
	}
}
