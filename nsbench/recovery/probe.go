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

// DialTimeout bounds one attempt to open a connection; a failed attempt
// is retried at the next request's time.
const DialTimeout = time.Second

// reqSize is a request's and its answer's size: a sequence number.
const reqSize = 8

// Probe runs for d, sending a request to addr every interval through a
// connection dial opens, and returns the timeline. A request that cannot
// be sent (no connection) is recorded unanswered; a connection that errs
// or stalls (StallAfter) is closed, its unanswered requests stay
// unanswered, and the next request dials a new one. Answers on a closed
// connection no longer count.
func Probe(ctx context.Context, dial func(ctx context.Context) (net.Conn, error), interval, d time.Duration) (Timeline, error) {
	if interval <= 0 || d <= 0 {
		return Timeline{}, errors.New("recovery probe: interval and duration must be positive")
	}
	p := &prober{start: time.Now(), dial: dial}
	t := Timeline{Interval: interval}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	end := time.NewTimer(d)
	defer end.Stop()
	for seq := uint64(0); ; seq++ {
		select {
		case <-ctx.Done():
			p.close()
			return p.timeline(t), ctx.Err()
		case <-end.C:
			p.close()
			// Answers in flight get one more StallAfter to arrive.
			p.drain(StallAfter)
			return p.timeline(t), nil
		case <-tick.C:
		}
		p.send(ctx, seq)
	}
}

// prober is Probe's state: the requests so far and the live connection.
type prober struct {
	start time.Time
	dial  func(ctx context.Context) (net.Conn, error)

	mu       sync.Mutex
	probes   []Request
	conn     net.Conn
	pending  map[uint64]bool // sent on conn, not answered yet
	dials    int
	readers  sync.WaitGroup
	dialling bool
}

func (p *prober) since() time.Duration { return time.Since(p.start) }

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
	binary.BigEndian.PutUint64(b[:], seq)
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

// redial opens a connection in the background, one attempt at a time.
func (p *prober) redial(ctx context.Context) {
	p.mu.Lock()
	if p.dialling {
		p.mu.Unlock()
		return
	}
	p.dialling = true
	p.mu.Unlock()
	go func() {
		dctx, cancel := context.WithTimeout(ctx, DialTimeout)
		c, err := p.dial(dctx)
		cancel()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.dialling = false
		if err != nil {
			return
		}
		if p.conn != nil || ctx.Err() != nil {
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
		seq := binary.BigEndian.Uint64(b[:])
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
	if p.conn != nil {
		p.dropLocked()
	}
	p.mu.Unlock()
}

func (p *prober) timeline(t Timeline) Timeline {
	p.readers.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Requests = append([]Request(nil), p.probes...)
	t.Dials = p.dials
	return t
}

// Serve answers every request on l with its own sequence number until ctx
// ends: the echo the prober's requests cross the tunnel to.
func Serve(ctx context.Context, l net.Listener) error {
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
