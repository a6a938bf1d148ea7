package recovery

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/manyrr"
)

const ms = time.Millisecond

// steady is a timeline of a request every 10 ms for n requests, each
// answered 2 ms after it was sent unless lost says otherwise, or answered
// late (at the returned time) when late says so.
func steady(n int, lost func(sent time.Duration) bool, late func(sent time.Duration) time.Duration) Timeline {
	t := Timeline{Interval: 10 * ms, Dials: 1}
	for i := 1; i <= n; i++ {
		r := Request{Sent: time.Duration(i) * 10 * ms}
		switch {
		case late != nil && late(r.Sent) > 0:
			r.Answered = late(r.Sent)
		case lost == nil || !lost(r.Sent):
			r.Answered = r.Sent + 2*ms
		}
		t.Requests = append(t.Requests, r)
	}
	return t
}

func TestRecover(t *testing.T) {
	fault := Fault{Start: time.Second, End: 2 * time.Second}
	// Answers stop at the fault's start and come back 150 ms after its end.
	gap := steady(400, func(s time.Duration) bool { return s >= time.Second && s < 2150*ms }, nil)
	r, err := Recover(gap, fault, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The first answer after the end: the request sent at 2.15 s, answered at 2.152 s.
	if r.AtLeast || r.Seconds < 0.1519 || r.Seconds > 0.1521 || !r.Interrupted {
		t.Errorf("gap: %+v, want 0.152 s, interrupted", r)
	}
	// Sent from 1.00 s to 2.15 s inclusive: 116 requests, all but the last unanswered.
	if r.Sent != 116 || r.Lost != 115 {
		t.Errorf("gap: sent %d lost %d, want 116 and 115", r.Sent, r.Lost)
	}

	// A tunnel that rode through: the first answer after the end comes
	// within one interval, nothing lost.
	r, err = Recover(steady(400, nil, nil), fault, 5*time.Second)
	if err != nil || r.AtLeast || r.Seconds > 0.0021 || r.Lost != 0 || r.Interrupted {
		t.Errorf("rode through: %+v, %v; want a few ms, nothing lost", r, err)
	}

	// Held in a queue across the fault: requests sent during it are
	// answered after it, all at 2.4 s; that answer is the recovery.
	held := steady(400, nil, func(s time.Duration) time.Duration {
		if s >= time.Second && s < 2*time.Second {
			return 2400 * ms
		}
		return 0
	})
	// The requests sent just after the end are answered at once (2.012 s):
	// they come first.
	r, err = Recover(held, fault, 5*time.Second)
	if err != nil || r.Seconds < 0.0019 || r.Seconds > 0.0021 || r.Lost != 0 {
		t.Errorf("held: %+v, %v; want the first answer after the end, nothing lost", r, err)
	}

	// Never back within the bound: a bound, not a number.
	never := steady(800, func(s time.Duration) bool { return s >= time.Second }, nil)
	r, err = Recover(never, fault, 3*time.Second)
	if err != nil || !r.AtLeast || r.Seconds != 3 || !r.Interrupted || r.Lost != r.Sent || r.Sent != 401 {
		t.Errorf("never: %+v, %v; want ≥ 3 s with every request from the start to the bound lost (401)", r, err)
	}
	// An answer after the bound counts as lost and is no recovery.
	beyond := steady(800, func(s time.Duration) bool { return s >= time.Second && s < 7*time.Second }, nil)
	if r, err = Recover(beyond, fault, 3*time.Second); err != nil || !r.AtLeast {
		t.Errorf("beyond the bound: %+v, %v", r, err)
	}
}

func TestRecoverRefuses(t *testing.T) {
	tl := steady(100, nil, nil)
	for name, c := range map[string]struct {
		f     Fault
		bound time.Duration
	}{
		"ends before it starts": {Fault{Start: 500 * ms, End: 400 * ms}, time.Second},
		"no bound":              {Fault{Start: 100 * ms, End: 200 * ms}, 0},
	} {
		if _, err := Recover(tl, c.f, c.bound); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A timeline that stops before the bound, with no answer after the
	// fault, cannot tell a slow recovery from none.
	short := steady(100, func(s time.Duration) bool { return s >= 500*ms }, nil)
	if _, err := Recover(short, Fault{Start: 500 * ms, End: 600 * ms}, 2*time.Second); err == nil {
		t.Error("a timeline short of the bound was read as a recovery")
	}
}

func TestBins(t *testing.T) {
	tl := steady(100, func(s time.Duration) bool { return s >= 300*ms && s < 500*ms }, nil)
	bins := Bins(tl, 100*ms)
	if len(bins) != 11 {
		t.Fatalf("%d bins, want 11 (0 to 1 s)", len(bins))
	}
	want := []struct{ sent, answered int }{{9, 9}, {10, 10}, {10, 10}, {10, 0}, {10, 0}, {10, 10}}
	for i, w := range want {
		if bins[i].Sent != w.sent || bins[i].AnsweredSent != w.answered {
			t.Errorf("bin %d: %+v, want %d sent, %d answered", i, bins[i], w.sent, w.answered)
		}
	}
	if Bins(Timeline{}, 100*ms) != nil || Bins(tl, 0) != nil {
		t.Error("bins of nothing")
	}
}

// echoPath is a real echo on loopback behind a blackhole (which holds
// what open connections write while cut, with hold); done ends the echo
// and fails t if it ended in error.
func echoPath(t *testing.T, hold bool) (ctx context.Context, h *blackhole, done func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	served := make(chan error, 1)
	go func() { served <- serve(ctx, l) }()
	return ctx, &blackhole{addr: l.Addr().String(), hold: hold}, func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("echo: %v", err)
		}
	}
}

// blackhole is a path a test can cut: while down, connections already
// open take what is written (nothing crosses, nothing errs) and new ones
// are refused. With hold, what they took is delivered when the path is
// back, as TCP's retransmissions do across a link down; without, it is
// lost, as requests are whose connection the prober gave up.
type blackhole struct {
	addr  string
	hold  bool
	down  atomic.Bool
	mu    sync.Mutex
	conns []*holeConn
}

type holeConn struct {
	net.Conn
	h    *blackhole
	mu   sync.Mutex
	held []byte
	most int // the most it held at once
}

func (c *holeConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h.down.Load() {
		if !c.h.hold {
			return len(b), nil
		}
		c.held = append(c.held, b...)
		c.most = max(c.most, len(c.held))
		return len(b), nil
	}
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

func (c *holeConn) flushLocked() error {
	if len(c.held) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.held)
	c.held = nil
	return err
}

// cutAt cuts h at after from start for span, and sends the fault, on
// start's clock, once the path is back; a cut not begun by the end of
// t is called off.
func (h *blackhole) cutAt(t *testing.T, start time.Time, after, span time.Duration) <-chan Fault {
	faults := make(chan Fault, 1)
	cut := time.AfterFunc(after, func() {
		f := Fault{Start: time.Since(start)}
		h.set(true)
		time.AfterFunc(span, func() {
			f.End = time.Since(start)
			h.set(false)
			faults <- f
		})
	})
	t.Cleanup(func() { cut.Stop() })
	return faults
}

// mostHeld is the most any connection held at once.
func (h *blackhole) mostHeld() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	most := 0
	for _, c := range h.conns {
		c.mu.Lock()
		most = max(most, c.most)
		c.mu.Unlock()
	}
	return most
}

// set cuts the path (down) or brings it back, delivering what the open
// connections held (a closed one's is dropped).
func (h *blackhole) set(down bool) {
	h.down.Store(down)
	if down {
		return
	}
	h.mu.Lock()
	conns := h.conns
	h.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		_ = c.flushLocked()
		c.mu.Unlock()
	}
}

func (h *blackhole) dial(ctx context.Context) (net.Conn, error) {
	if h.down.Load() {
		return nil, errors.New("no route to host")
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", h.addr)
	if err != nil {
		return nil, err
	}
	hc := &holeConn{Conn: c, h: h}
	h.mu.Lock()
	h.conns = append(h.conns, hc)
	h.mu.Unlock()
	return hc, nil
}

// TestProbeAcrossACut: a real prober against a real echo over loopback,
// the path cut for 400 ms after the first answers: the requests before
// the cut are answered, the stalled connection is given up and a new one
// dialled once the path is back, Recover reads a recovery within a few
// intervals of the cut's end, with the requests of the cut lost, and the
// probe ends once settled.
func TestProbeAcrossACut(t *testing.T) {
	ctx, h, done := echoPath(t, false)

	start := time.Now()
	faults := h.cutAt(t, start, 500*ms, 400*ms)
	// Settled 300 ms after the tunnel is back: it ends well before the 4 s.
	tl, err := Probe(ctx, h.dial, Interval, 4*time.Second, Ending{Settle: 300 * ms})
	if err != nil {
		t.Fatal(err)
	}
	var fault Fault
	select {
	case fault = <-faults:
	default:
		t.Fatal("the cut did not end within the probe")
	}
	r, err := Recover(tl, fault, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := 0
	for _, q := range tl.Requests {
		if q.Sent < fault.Start-50*ms && q.OK() {
			before++
		}
	}
	t.Logf("%d requests, %d dials, fault %v–%v: %+v", len(tl.Requests), tl.Dials, fault.Start, fault.End, r)
	if last := tl.Requests[len(tl.Requests)-1].Sent; last > 3*time.Second {
		t.Errorf("the probe ran to %v: it did not end once settled after the cut", last)
	}
	if tl.StartUnixNs < start.UnixNano() || tl.StartUnixNs > time.Now().UnixNano() {
		t.Errorf("start %d: not this run's", tl.StartUnixNs)
	}
	if before < 10 {
		t.Errorf("%d requests answered before the cut, want most of 45", before)
	}
	if tl.Dials < 2 {
		t.Errorf("%d dials: the stalled connection was never given up", tl.Dials)
	}
	// Back at the first request after the end that finds the new
	// connection: a few intervals (a dial on loopback), well inside
	// StallAfter.
	if r.AtLeast || r.Seconds > StallAfter.Seconds() || !r.Interrupted || r.Lost < 20 {
		t.Errorf("recovery %+v: want within %v of the cut's end, the cut's requests lost", r, StallAfter)
	}
	done()
}

// TestProbeCalm: with Calm, a probe whose requests were all answered
// ends once Calm has passed, and one whose path was cut meanwhile runs on
// until it settled after the cut.
func TestProbeCalm(t *testing.T) {
	ctx, h, done := echoPath(t, false)
	tl, err := Probe(ctx, h.dial, Interval, 4*time.Second, Ending{Settle: 300 * ms, Calm: 500 * ms})
	last := tl.Requests[len(tl.Requests)-1].Sent
	if err != nil || last < 480*ms || last > 1500*ms || tl.Dials != 1 {
		t.Errorf("untouched: ended at %v with %d dials (%v), want soon after the 500 ms calm, one connection", last, tl.Dials, err)
	}
	cut := time.AfterFunc(200*ms, func() {
		h.down.Store(true)
		time.AfterFunc(800*ms, func() { h.down.Store(false) })
	})
	defer cut.Stop()
	tl, err = Probe(ctx, h.dial, Interval, 4*time.Second, Ending{Settle: 300 * ms, Calm: 500 * ms})
	last = tl.Requests[len(tl.Requests)-1].Sent
	if err != nil || last < 1300*ms || last > 3*time.Second || tl.Dials < 2 {
		t.Errorf("cut from 200 ms to 1 s: ended at %v with %d dials (%v), want settled 300 ms after the cut's end", last, tl.Dials, err)
	}
	done()
}

// TestProbeSettlesOnTheFault: a stall in the lead, before FaultFrom,
// then answers again, does not end the probe (seen through tw: a 270 ms
// stall a second into the lead ended a relay restart's probe before the
// relay was stopped); the fault's own cut, from FaultFrom on, does, once
// the path carried again for Settle, and never before FaultBy.
func TestProbeSettlesOnTheFault(t *testing.T) {
	type cut struct{ at, d time.Duration }
	for _, tc := range []struct {
		name          string
		cuts          []cut
		faultBy       time.Duration
		ended, before time.Duration // the last request's bounds
	}{
		// The lead's stall (100–500 ms), the fault's cut (1.2–1.6 s):
		// settled 300 ms after the cut's end, not after the stall.
		{"stall in the lead", []cut{{100 * ms, 400 * ms}, {1200 * ms, 400 * ms}}, 1500 * ms, 1900 * ms, 3 * time.Second},
		// A short cut inside the fault's span: not settled before
		// FaultBy (its last request a tick before it).
		{"cut before FaultBy", []cut{{1100 * ms, 100 * ms}}, 2500 * ms, 2400 * ms, 3500 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, h, done := echoPath(t, false)
			for _, c := range tc.cuts {
				timer := time.AfterFunc(c.at, func() {
					h.down.Store(true)
					time.AfterFunc(c.d, func() { h.down.Store(false) })
				})
				defer timer.Stop()
			}
			end := Ending{Settle: 300 * ms, FaultFrom: time.Second, FaultBy: tc.faultBy}
			tl, err := Probe(ctx, h.dial, Interval, 4*time.Second, end)
			last := tl.Requests[len(tl.Requests)-1].Sent
			if err != nil || last < tc.ended || last > tc.before {
				t.Errorf("cuts %v, FaultBy %v: ended at %v (%v), want from %v to %v", tc.cuts, tc.faultBy, last, err, tc.ended, tc.before)
			}
			done()
		})
	}
}

// serve echoes every connection on l until ctx ends, as the many-rr
// fixture does the prober's requests.
func serve(ctx context.Context, l net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := context.AfterFunc(ctx, func() { c.Close() })
			defer done()
			defer c.Close()
			_, _ = io.Copy(c, c)
		}()
	}
}

// The prober's requests are the many-rr fixture's size, so that its echo
// answers them whole.
func TestRequestIsManyRRs(t *testing.T) {
	if reqSize != manyrr.Size {
		t.Errorf("request %d bytes, the many-rr fixture echoes %d", reqSize, manyrr.Size)
	}
}
