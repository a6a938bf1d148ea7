package recovery

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// StallAfter is how long the prober waits for its oldest unanswered
// request before it gives up on the connection and dials a new one: a TCP
// connection stalled across a fault comes back only at its next
// retransmission (its backoff grows to seconds), while a new connection
// shows as soon as the tunnel carries traffic again. Far above a request's
// round trip on every path measured here (tens of ms on the WAN condition).
const StallAfter = 250 * time.Millisecond

// DialTimeout bounds one attempt to open a connection.
const DialTimeout = time.Second

// RedialEvery is how often a new attempt starts while none has
// succeeded, and MaxDialing how many may be under way at once
// (DialTimeout / RedialEvery).
const (
	RedialEvery = 100 * time.Millisecond
	MaxDialing  = 10
)

// reqSize is a request's and its answer's size: the many-rr fixture's
// (manyrr.Size), which echoes each request whole, so that every
// transport's path to it is the prober's too; the first 8 bytes carry
// the request's sequence number.
const reqSize = 64

// Ending says when a probe may end before its duration; zero values
// never end it early.
type Ending struct {
	// Settle: once a request went unanswered and every request of the
	// last Settle was answered: the fault is over and the tunnel back.
	Settle time.Duration
	// Calm: once Calm has passed since the start with every request
	// answered: the fault, over by then, left the path alone (a restart
	// of a piece the probe's traffic does not cross).
	Calm time.Duration
	// FaultFrom and FaultBy are when the fault is due to start and the
	// latest it may end, from the probe's start (0: unknown). Settle
	// counts only a gap that began at FaultFrom or later and ends the
	// probe no sooner than FaultBy: a stall in the lead, or one while
	// the fault was still under way (a relay draining its connections
	// before it stops), followed by a second of answers, is not the
	// fault's recovery. Only the orchestrator knows when the fault
	// really ended; the prober, maybe on another host, knows its bounds.
	FaultFrom, FaultBy time.Duration
}

// Probe runs for d, sending a request to addr every interval through a
// connection dial opens, and returns the timeline. A request that cannot
// be sent (no connection) is recorded unanswered; a connection that errs
// or stalls (StallAfter) is closed, its unanswered requests stay
// unanswered, and the next request dials a new one. Answers on a closed
// connection no longer count. It ends early as end says.
func Probe(ctx context.Context, dial func(ctx context.Context) (net.Conn, error), interval, d time.Duration, end Ending) (Timeline, error) {
	return probe(ctx, dial, interval, d, end, false)
}

// ProbeWithStream is Probe with a stream (stream.go) through a connection
// of its own to the same echo, from the start to the end; ending early
// also waits for the stream to carry bytes again, or to have failed.
func ProbeWithStream(ctx context.Context, dial func(ctx context.Context) (net.Conn, error), interval, d time.Duration, end Ending) (Timeline, error) {
	return probe(ctx, dial, interval, d, end, true)
}

func probe(ctx context.Context, dial func(ctx context.Context) (net.Conn, error), interval, d time.Duration, end Ending, stream bool) (Timeline, error) {
	if interval <= 0 || d <= 0 || end.Settle < 0 || end.Calm < 0 {
		return Timeline{}, errors.New("recovery probe: interval and duration must be positive")
	}
	p := &prober{start: time.Now(), every: interval, attempts: attempts{dial: dial}}
	t := Timeline{StartUnixNs: p.start.UnixNano(), Interval: interval}
	var st *streamer
	if stream {
		st = startStream(ctx, dial, p.start)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	over := time.NewTimer(d)
	defer over.Stop()
	for seq := uint64(0); ; seq++ {
		select {
		case <-ctx.Done():
			p.close()
			t.Stream = st.stop()
			return p.timeline(t), ctx.Err()
		case <-over.C:
			p.close()
			// Answers in flight get one more StallAfter to arrive.
			p.drain(StallAfter)
			t.Stream = st.stop()
			return p.timeline(t), nil
		case <-tick.C:
		}
		if (end.Settle > 0 && p.settled(end) || end.Calm > 0 && p.calm(end.Calm)) && st.settled() {
			p.close()
			t.Stream = st.stop()
			return p.timeline(t), nil
		}
		p.send(ctx, seq)
	}
}

// settled reports whether, after the path had carried traffic, some
// request sent from end.FaultFrom on went unanswered (for StallAfter at
// least: not one still in flight), every request sent in the last
// end.Settle, up to StallAfter ago, was answered, and end.FaultBy has
// passed.
func (p *prober) settled(end Ending) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now, settle := p.since(), end.Settle
	if now < end.FaultBy {
		return false
	}
	carried, gap, answered := false, false, 0
	for _, r := range p.probes {
		switch age := now - r.Sent; {
		case age < StallAfter: // may still be answered
		case age <= settle+StallAfter:
			if !r.OK() {
				return false
			}
			answered++
		case r.OK():
			carried = true
		case carried && r.Sent >= end.FaultFrom: // unanswered after the path had carried traffic (not the first dial's)
			gap = true
		}
	}
	return gap && answered > 0 && time.Duration(answered)*p.interval() >= settle
}

// calm reports whether calm has passed since the start and every request
// sent up to StallAfter ago was answered, from the first answered one on
// (those before found no connection yet: the first dial's).
func (p *prober) calm(calm time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.since()
	if now < calm {
		return false
	}
	carried := false
	for _, r := range p.probes {
		switch {
		case r.OK():
			carried = true
		case carried && now-r.Sent >= StallAfter:
			return false
		}
	}
	return carried
}

// prober is Probe's state: the requests so far and the live connection.
type prober struct {
	start time.Time
	every time.Duration // the interval

	mu     sync.Mutex
	probes []Request
	live
	attempts
	closed bool // the probe ended: no new connection
}

// live is the connection the requests go on, and what it owes.
type live struct {
	conn    net.Conn
	pending map[uint64]bool // sent on conn, not answered yet
	dials   int             // connections opened in all
	readers sync.WaitGroup
}

// attempts are the dials under way (redial).
type attempts struct {
	dial     func(ctx context.Context) (net.Conn, error)
	dialling int           // attempts under way
	lastDial time.Duration // when the last attempt started
	dialers  sync.WaitGroup
}

func (p *prober) since() time.Duration { return time.Since(p.start) }

func (p *prober) interval() time.Duration { return p.every }

// send records request seq and sends it on the live connection, dialling
// one first when there is none, and drops a stalled one.
func (p *prober) send(ctx context.Context, seq uint64) {
	p.mu.Lock()
	p.probes = append(p.probes, Request{Sent: p.since()})
	if p.conn != nil && p.stalled() {
		p.dropLocked()
	}
	c := p.conn
	p.mu.Unlock()
	if c == nil {
		p.redial(ctx)
		return // this request found no connection: unanswered
	}
	var b [reqSize]byte
	binary.BigEndian.PutUint64(b[:8], seq)
	p.mu.Lock()
	p.pending[seq] = true
	p.mu.Unlock()
	_ = c.SetWriteDeadline(time.Now().Add(StallAfter))
	if _, err := c.Write(b[:]); err != nil {
		p.drop(c)
	}
}

// stalled reports whether the oldest pending request waited StallAfter.
func (p *prober) stalled() bool {
	now := p.since()
	for seq := range p.pending {
		if now-p.probes[seq].Sent >= StallAfter {
			return true
		}
	}
	return false
}

// redial opens a connection in the background: a new attempt every
// RedialEvery while none has succeeded, up to MaxDialing at once, so that
// the first connection after a fault waits for no earlier attempt's SYN
// retransmission (a second, then two): the recovery is timed to about
// RedialEvery.
func (p *prober) redial(ctx context.Context) {
	p.mu.Lock()
	now := p.since()
	if p.dialling >= MaxDialing || p.dialling > 0 && now-p.lastDial < RedialEvery {
		p.mu.Unlock()
		return
	}
	p.dialling++
	p.lastDial = now
	p.mu.Unlock()
	p.dialers.Add(1)
	go func() {
		defer p.dialers.Done()
		dctx, cancel := context.WithTimeout(ctx, DialTimeout)
		c, err := p.dial(dctx)
		cancel()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.dialling--
		if err != nil {
			return
		}
		if p.conn != nil || p.closed || ctx.Err() != nil {
			c.Close()
			return
		}
		p.conn, p.pending = c, map[uint64]bool{}
		p.dials++
		p.readers.Add(1)
		go p.read(c)
	}()
}

// read records the answers on c until it closes.
func (p *prober) read(c net.Conn) {
	defer p.readers.Done()
	var b [reqSize]byte
	for {
		if _, err := io.ReadFull(c, b[:]); err != nil {
			p.drop(c)
			return
		}
		seq := binary.BigEndian.Uint64(b[:8])
		p.mu.Lock()
		if p.conn == c && p.pending[seq] {
			delete(p.pending, seq)
			p.probes[seq].Answered = p.since()
		}
		p.mu.Unlock()
	}
}

// drop closes c if it is still the live connection.
func (p *prober) drop(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == c {
		p.dropLocked()
	}
}

func (p *prober) dropLocked() {
	p.conn.Close()
	p.conn, p.pending = nil, nil
}

// drain waits up to d for the pending answers, then closes.
func (p *prober) drain(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		n := len(p.pending)
		p.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(Interval) // polling the count, bounded by d
	}
}

func (p *prober) close() {
	p.mu.Lock()
	p.closed = true
	if p.conn != nil {
		p.dropLocked()
	}
	p.mu.Unlock()
}

func (p *prober) timeline(t Timeline) Timeline {
	p.dialers.Wait()
	p.readers.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Requests = append([]Request(nil), p.probes...)
	t.Dials = p.dials
	return t
}
