package impair

import (
	"context"
	"math/rand/v2"
	"sync"
)

// delayLine holds one direction's frames and releases them in arrival
// order. Each frame is due at its arrival plus the delay, plus a jitter
// drawn uniformly from [-jitter, +jitter], plus, with a rate, the time the
// frames ahead of it and itself take to cross a link of that rate (netem's
// semantics). A frame is never due before the one ahead of it: jitter
// delays, it does not reorder. With due times in arrival order, a FIFO
// ring is the whole scheduler: the releasing goroutine sleeps until the
// head is due, then passes on every frame that is due.
type delayLine struct {
	limit int

	mu     sync.Mutex
	times  dueTimes  // guarded by mu
	ring   []delayed // grows up to limit
	head   int
	n      int
	wakeup chan struct{} // signalled when the line goes from empty to not empty
}

// dueTimes gives each frame of one direction, in arrival order, the time
// it is due under the line's shape (the line's semantics above).
type dueTimes struct {
	delay   int64     // ns
	jitter  int64     // ns, ±
	rate    uint64    // bits/s on the wire; 0 is unlimited
	rng     *rand.PCG // jitter draws; nil without jitter
	lastDue int64     // the newest frame's due time: the next is never earlier
	txFree  int64     // with a rate, when the emulated link has sent what it holds
}

// next is the due time of a frame that arrived at now, wire bytes long
// on the emulated link.
func (t *dueTimes) next(now int64, wire int) int64 {
	due := now
	if t.rate > 0 {
		t.txFree = max(t.txFree, now) + int64(uint64(wire)*8*1e9/t.rate)
		due = t.txFree
	}
	due += t.delay
	if t.rng != nil {
		due += int64(t.rng.Uint64()%uint64(2*t.jitter+1)) - t.jitter
	}
	due = max(due, t.lastDue)
	t.lastDue = due
	return due
}

type delayed struct {
	due   int64 // ns on the clock of the line's clock
	frame []byte
}

// lineShape is what a delay line does to each frame.
type lineShape struct {
	Delay, Jitter int64  // ns
	RateBps       uint64 // bits/s on the wire; 0 is unlimited
	// Seed and Stream seed the jitter draws (a stream of its own, apart
	// from the loss draws of the same direction).
	Seed, Stream uint64
}

func newDelayLine(delay int64, limit int) *delayLine {
	return newShapedLine(lineShape{Delay: delay}, limit)
}

func newShapedLine(s lineShape, limit int) *delayLine {
	d := &delayLine{limit: limit, times: dueTimes{delay: s.Delay, jitter: s.Jitter, rate: s.RateBps},
		ring: make([]delayed, min(limit, 1024)), wakeup: make(chan struct{}, 1)}
	if s.Jitter > 0 {
		d.times.rng = rand.NewPCG(s.Seed, 0x6a09e667f3bcc909^s.Stream)
	}
	return d
}

// push queues frame, received at now, with its length as its wire size.
func (d *delayLine) push(now int64, frame []byte) bool { return d.pushSized(now, frame, len(frame)) }

// pushSized queues frame, received at now, wire bytes long on the
// emulated link. It reports false when the line already holds limit
// frames (the frame is then the caller's to drop, and takes no link time).
func (d *delayLine) pushSized(now int64, frame []byte, wire int) bool {
	d.mu.Lock()
	if d.n == d.limit {
		d.mu.Unlock()
		return false
	}
	if d.n == len(d.ring) {
		d.growLocked()
	}
	d.ring[(d.head+d.n)%len(d.ring)] = delayed{due: d.times.next(now, wire), frame: frame}
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
