package impair

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Methods.
const (
	MethodNetem     = "netem"
	MethodUserspace = "userspace"
)

// Impairment applies a Condition to the client's and the server's egress.
type Impairment interface {
	// Method names the mechanism, MethodNetem or MethodUserspace.
	Method() string
	// Set puts c in force, replacing whatever condition was, and returns
	// what the mechanism reports it now holds (read back, never echoed
	// from c). Setting the same condition twice is harmless; each Set
	// restarts the loss sequence.
	Set(ctx context.Context, c Condition) ([]Applied, error)
	// Counters returns each impaired direction's cumulative counters.
	// Subtract two snapshots for what happened in between.
	Counters(ctx context.Context) ([]Counters, error)
	// Clear removes the impairment and restores the unimpaired path. It is
	// safe to call twice and when nothing was set.
	Clear(ctx context.Context) error
}

// ErrUnsupported says the mechanism cannot work on this kernel (netem
// without sch_netem); errors.Is finds it in what Set returns.
var ErrUnsupported = errors.New("not supported by this kernel")

// NarrowPath is an Impairment that can make a narrow hop (the userspace
// one; netem cannot: a qdisc neither drops by size nor answers with ICMP).
type NarrowPath interface {
	// Narrow returns the narrow hop's cumulative counts over every port.
	Narrow(ctx context.Context) (NarrowCounts, error)
}

// ErrNarrowNeedsUserspace is netem's answer to a condition with a narrow
// hop.
var ErrNarrowNeedsUserspace = errors.New("a narrow hop (mtu=) needs the userspace impairment: netem cannot drop by size or send ICMP (use --impairment userspace or auto)")

// Applied is one impaired direction's condition as the mechanism reports
// it.
type Applied struct {
	Role    string // whose egress: "client", "server"
	Where   string // "client eth0", "switch port client"
	Delay   time.Duration
	Jitter  time.Duration
	RateBps uint64
	LossPct float64
	Limit   int
	Seed    *uint64 // nil when the mechanism has no seed
}

func (a Applied) String() string {
	s := fmt.Sprintf("limit %d delay %s", a.Limit, fmtDuration(a.Delay))
	if a.Jitter > 0 {
		s += " " + fmtDuration(a.Jitter)
	}
	s += fmt.Sprintf(" loss %s%%", formatFloat(roundTo(a.LossPct, 6)))
	if a.RateBps > 0 {
		s += " rate " + rateSpec(a.RateBps)
	}
	if a.Seed != nil {
		s += fmt.Sprintf(" seed %d", *a.Seed)
	}
	return s
}

// matches reports whether a holds c's one-way delay, loss and limit, within
// the mechanism's resolution (netem keeps the delay in 64 ns ticks and the
// loss as a 32-bit fraction).
func (a Applied) matches(c Condition) error {
	var errs []error
	if d := a.Delay - c.OneWay(); d < -time.Microsecond || d > time.Microsecond {
		errs = append(errs, fmt.Errorf("delay %s, want %s", a.Delay, c.OneWay()))
	}
	if d := a.Jitter - c.Jitter; d < -time.Microsecond || d > time.Microsecond {
		errs = append(errs, fmt.Errorf("jitter %s, want %s", a.Jitter, c.Jitter))
	}
	// netem keeps a rate in bytes per second.
	if d := int64(a.RateBps) - int64(c.RateBps); d < -8 || d > 8 {
		errs = append(errs, fmt.Errorf("rate %d bit/s, want %d", a.RateBps, c.RateBps))
	}
	if d := a.LossPct - c.LossPct; d < -1e-6 || d > 1e-6 {
		errs = append(errs, fmt.Errorf("loss %v%%, want %v%%", a.LossPct, c.LossPct))
	}
	if a.Limit != c.QueueLimit() {
		errs = append(errs, fmt.Errorf("limit %d, want %d", a.Limit, c.QueueLimit()))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s holds %w", a.Where, errors.Join(errs...))
	}
	return nil
}

// Counters are one impaired direction's cumulative counters.
type Counters struct {
	Role  string // whose egress
	Where string

	Sent, SentBytes uint64 // passed on after the delay
	// Dropped is what the impairment dropped: the emulated loss plus queue
	// overflow (netem's own drop counter mixes the two).
	Dropped    uint64
	Overlimits uint64 // queue overflow, part of Dropped
	Requeues   uint64 // netem only
	Backlog    uint64 // packets held now (a level, not a count)
	// BacklogBytes is the bytes held now.
	BacklogBytes uint64
	LostOutside
}

// LostOutside are frames the userspace impairment lost outside the
// emulation: kernel drops before it read them (SocketDrops) and failed
// sends (SendErrors); not part of Dropped. Always 0 for netem.
type LostOutside struct {
	SocketDrops, SendErrors uint64
}

// Sub returns what happened between prev and c: counts are subtracted,
// levels (the backlog) are c's.
func (c Counters) Sub(prev Counters) Counters {
	d := c
	d.Sent = sub(c.Sent, prev.Sent)
	d.SentBytes = sub(c.SentBytes, prev.SentBytes)
	d.Dropped = sub(c.Dropped, prev.Dropped)
	d.Overlimits = sub(c.Overlimits, prev.Overlimits)
	d.Requeues = sub(c.Requeues, prev.Requeues)
	d.SocketDrops = sub(c.SocketDrops, prev.SocketDrops)
	d.SendErrors = sub(c.SendErrors, prev.SendErrors)
	return d
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0 // a counter reset (a new qdisc or forwarder); never negative
	}
	return a - b
}

// Offered is the packets that reached the impairment: passed on, dropped,
// still held, or lost before it counted them.
func (c Counters) Offered() uint64 { return c.Sent + c.Dropped + c.Backlog + c.SocketDrops }

// Lost is every packet the direction lost, emulated or not.
func (c Counters) Lost() uint64 { return c.Dropped + c.SocketDrops + c.SendErrors }

// SubAll subtracts prev from cur direction by direction (matched by role).
func SubAll(cur, prev []Counters) []Counters {
	out := make([]Counters, 0, len(cur))
	for _, c := range cur {
		d := c
		for _, p := range prev {
			if p.Role == c.Role && p.Where == c.Where {
				d = c.Sub(p)
			}
		}
		out = append(out, d)
	}
	return out
}

// Text renders one direction's counters for the report's Diagnostics, in
// the shape of `tc -s qdisc` that the reference shows, then the drop
// ratio as the reference computes it: dropped / (sent + dropped).
func (c Counters) Text(method string, a *Applied) string {
	var b strings.Builder
	kind := "netem"
	if method == MethodUserspace {
		kind = "userspace impairment"
	}
	fmt.Fprintf(&b, "%s on %s (%s egress)", kind, c.Where, c.Role)
	if a != nil {
		fmt.Fprintf(&b, ": %s", a)
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, " Sent %d bytes %d pkt (dropped %d, overlimits %d requeues %d)\n",
		c.SentBytes, c.Sent, c.Dropped, c.Overlimits, c.Requeues)
	fmt.Fprintf(&b, " backlog %db %dp\n", c.BacklogBytes, c.Backlog)
	if method == MethodUserspace {
		fmt.Fprintf(&b, " lost outside the emulation: socket drops %d, send errors %d\n", c.SocketDrops, c.SendErrors)
	}
	ratio := "n/a"
	if c.Sent+c.Dropped > 0 {
		ratio = fmt.Sprintf("%.3f %%", 100*float64(c.Dropped)/float64(c.Sent+c.Dropped))
	}
	fmt.Fprintf(&b, "drop ratio: %d/(%d+%d) = %s", c.Dropped, c.Sent, c.Dropped, ratio)
	return b.String()
}

func fmtDuration(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return formatFloat(float64(d)/float64(time.Microsecond)) + "us"
}

func roundTo(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}
