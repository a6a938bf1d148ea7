package impair

import (
	"context"
	"sync"
)

// delayLine holds one direction's frames for a fixed delay and releases
// them in arrival order. With one delay for every frame, arrival order is
// release order, so a FIFO ring is the whole scheduler: the releasing
// goroutine sleeps until the head is due, then passes on every frame that
// is due.
type delayLine struct {
	delay int64 // ns
	limit int

	mu     sync.Mutex
	ring   []delayed // grows up to limit
	head   int
	n      int
	wakeup chan struct{} // signalled when the line goes from empty to not empty
}

type delayed struct {
	due   int64 // ns on the clock of the line's clock
	frame []byte
}

func newDelayLine(delay int64, limit int) *delayLine {
	return &delayLine{delay: delay, limit: limit, ring: make([]delayed, min(limit, 1024)), wakeup: make(chan struct{}, 1)}
}

// push queues frame, received at now, for release at now+delay. It
// reports false when the line already holds limit frames (the frame is
// then the caller's to drop).
func (d *delayLine) push(now int64, frame []byte) bool {
	d.mu.Lock()
	if d.n == d.limit {
		d.mu.Unlock()
		return false
	}
	if d.n == len(d.ring) {
		d.growLocked()
	}
	d.ring[(d.head+d.n)%len(d.ring)] = delayed{due: now + d.delay, frame: frame}
	d.n++
	wasEmpty := d.n == 1
	d.mu.Unlock()
	if wasEmpty {
		select {
		case d.wakeup <- struct{}{}:
		default:
		}
	}
	return true
}

// growLocked doubles the ring (up to limit), keeping the order.
func (d *delayLine) growLocked() {
	next := make([]delayed, min(2*len(d.ring), d.limit))
	for i := 0; i < d.n; i++ {
		next[i] = d.ring[(d.head+i)%len(d.ring)]
	}
	d.ring, d.head = next, 0
}

// headDue returns the due time of the oldest frame, if any.
func (d *delayLine) headDue() (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == 0 {
		return 0, false
	}
	return d.ring[d.head].due, true
}

// popDue moves every frame due at now into out (reused) and returns it.
func (d *delayLine) popDue(now int64, out []delayed) []delayed {
	out = out[:0]
	d.mu.Lock()
	for d.n > 0 && d.ring[d.head].due <= now {
		out = append(out, d.ring[d.head])
		d.ring[d.head] = delayed{}
		d.head = (d.head + 1) % len(d.ring)
		d.n--
	}
	d.mu.Unlock()
	return out
}

// backlog is the number of frames held now.
func (d *delayLine) backlog() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// clock is the line's time source: now in ns, and a sleep until an
// absolute time on the same scale. Tests use a fake one.
type clock interface {
	now() int64
	sleepUntil(t int64)
}

// run releases frames until ctx ends: it sleeps until the head frame is
// due and hands every due frame to send, in order.
func (d *delayLine) run(ctx context.Context, clk clock, send func(frame []byte)) {
	var batch []delayed
	for {
		due, ok := d.headDue()
		if !ok {
			select {
			case <-d.wakeup:
				continue
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		if now := clk.now(); due > now {
			clk.sleepUntil(due)
		}
		batch = d.popDue(clk.now(), batch)
		for _, f := range batch {
			send(f.frame)
		}
	}
}
