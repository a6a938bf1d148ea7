package impair

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/role"
)

// NetemSeedNote says why netem's loss is not paired across transports.
const NetemSeedNote = "netem's PRNG seed is not set: vishvananda/netlink cannot send TCA_NETEM_PRNG_SEED " +
	"(and kernels before 6.3 lack it), so each transport sees its own loss positions"

// Target is one impaired egress interface.
type Target struct {
	Role *role.Role // whose egress
	Link string     // the interface in the role, e.g. "eth0"
}

// Netem is the kernel mechanism: a netem qdisc at the root of each
// target's interface, managed through netlink inside the targets' roles
// (the ops below).
type Netem struct {
	targets []Target
}

var _ Impairment = (*Netem)(nil)

// NewNetem impairs the egress of every target. It creates nothing until Set.
func NewNetem(targets []Target) *Netem { return &Netem{targets: targets} }

func (*Netem) Method() string { return MethodNetem }

// netemHandle is the qdisc handle twnsbench gives its netem ("1:").
var netemHandle = netlink.MakeHandle(1, 0)

// netemRequest is what the netem ops carry into a role: the link, and for
// a Set the qdisc's attributes.
type netemRequest struct {
	Link  string
	Attrs netlink.NetemQdiscAttrs
}

// netemState is a netem op's answer. What the caller tells apart crosses
// in it, not as an error (an op's error is text, and its result is lost
// with it): Found (a netem sits at the link's root), Unsupported (the
// kernel refused netem for want of sch_netem, Refusal its answer).
type netemState struct {
	Found       bool
	Unsupported bool
	Refusal     string
	Applied     Applied  // read back after a Set
	Counters    Counters // a Counters read
}

var (
	// netemSetOp replaces the link's root qdisc with netem and reads it
	// back.
	netemSetOp = role.NewOp("impair.netem-set", func(_ context.Context, r netemRequest) (netemState, error) {
		link, err := netlink.LinkByName(r.Link)
		if err != nil {
			return netemState{}, fmt.Errorf("%s: %w", r.Link, err)
		}
		q := netlink.NewNetem(netlink.QdiscAttrs{
			LinkIndex: link.Attrs().Index,
			Handle:    netemHandle,
			Parent:    netlink.HANDLE_ROOT,
		}, r.Attrs)
		if err := netlink.QdiscReplace(q); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
				return netemState{Unsupported: true, Refusal: err.Error()}, nil
			}
			return netemState{}, err
		}
		got, err := rootNetem(link)
		if err != nil {
			return netemState{}, fmt.Errorf("read back: %w", err)
		}
		if got == nil {
			return netemState{}, errors.New("read back: no netem at the root after replace")
		}
		return netemState{Found: true, Applied: fromNetem(got, netlink.TickInUsec())}, nil
	})
	// netemCountersOp reads the statistics of the netem at the link's
	// root (Found false when there is none).
	netemCountersOp = role.NewOp("impair.netem-counters", func(_ context.Context, r netemRequest) (netemState, error) {
		link, err := netlink.LinkByName(r.Link)
		if err != nil {
			return netemState{}, fmt.Errorf("%s: %w", r.Link, err)
		}
		q, err := rootNetem(link)
		if err != nil || q == nil {
			return netemState{}, err
		}
		return netemState{Found: true, Counters: netemCounters(q.Attrs().Statistics)}, nil
	})
	// netemClearOp deletes the netem at the link's root; a link without
	// one, or gone, is left alone.
	netemClearOp = role.NewOp("impair.netem-clear", func(_ context.Context, r netemRequest) (netemState, error) {
		link, err := netlink.LinkByName(r.Link)
		if err != nil {
			return netemState{}, nil // the link is gone: nothing to clear
		}
		q, err := rootNetem(link)
		if err != nil || q == nil {
			return netemState{}, err
		}
		if err := netlink.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
			return netemState{Found: true}, err
		}
		return netemState{Found: true}, nil
	})
)

// Set replaces the root qdisc of every target with netem holding c and
// reads it back. QdiscReplace makes a repeated Set harmless.
func (n *Netem) Set(ctx context.Context, c Condition) ([]Applied, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Narrow.MTU > 0 {
		return nil, ErrNarrowNeedsUserspace
	}
	var applied []Applied
	for _, t := range n.targets {
		a, err := n.set(ctx, t, c)
		if err != nil {
			return applied, err
		}
		applied = append(applied, a)
	}
	return applied, nil
}

func (n *Netem) set(ctx context.Context, t Target, c Condition) (Applied, error) {
	st, err := netemSetOp.On(ctx, t.Role, netemRequest{Link: t.Link, Attrs: netemAttrs(c)})
	if err == nil && st.Unsupported {
		err = fmt.Errorf("%w (%s): the kernel has no sch_netem", ErrUnsupported, st.Refusal)
	}
	if err != nil {
		return Applied{}, fmt.Errorf("netem on %s %s: %w", t.Role.Name(), t.Link, err)
	}
	a := st.Applied
	a.Role, a.Where = t.Role.Name(), t.Role.Name()+" "+t.Link
	return a, a.matches(c)
}

// Counters reads each target's netem statistics.
func (n *Netem) Counters(ctx context.Context) ([]Counters, error) {
	var out []Counters
	for _, t := range n.targets {
		st, err := netemCountersOp.On(ctx, t.Role, netemRequest{Link: t.Link})
		if err == nil && !st.Found {
			err = errors.New("no netem qdisc")
		}
		if err != nil {
			return out, fmt.Errorf("netem statistics of %s %s: %w", t.Role.Name(), t.Link, err)
		}
		c := st.Counters
		c.Role, c.Where = t.Role.Name(), t.Role.Name()+" "+t.Link
		out = append(out, c)
	}
	return out, nil
}

// Clear deletes every target's netem; the interface falls back to its
// default qdisc. A target without netem is left alone.
func (n *Netem) Clear(ctx context.Context) error {
	var errs []error
	for _, t := range n.targets {
		if _, err := netemClearOp.On(ctx, t.Role, netemRequest{Link: t.Link}); err != nil {
			errs = append(errs, fmt.Errorf("remove netem from %s %s: %w", t.Role.Name(), t.Link, err))
		}
	}
	return errors.Join(errs...)
}

// rootNetem returns the netem at link's root, or nil when there is none.
func rootNetem(link netlink.Link) (*netlink.Netem, error) {
	qs, err := netlink.QdiscList(link)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		if nq, ok := q.(*netlink.Netem); ok && nq.Attrs().Parent == netlink.HANDLE_ROOT {
			return nq, nil
		}
	}
	return nil, nil
}

// netemAttrs converts c into one direction's netem: delay RTT/2 (µs) with
// the jitter (uniform: no distribution table), the full loss, the rate
// (bytes/s), the queue limit. No correlation or deliberate reordering
// (netem may reorder when the jitter exceeds the gap between packets).
func netemAttrs(c Condition) netlink.NetemQdiscAttrs {
	return netlink.NetemQdiscAttrs{
		Latency: uint32(c.OneWay() / time.Microsecond),
		Jitter:  uint32(c.Jitter / time.Microsecond),
		Loss:    float32(c.LossPct),
		Limit:   uint32(c.QueueLimit()),
		Rate64:  c.RateBps / 8,
	}
}

// fromNetem converts what the kernel reports back: the delay in scheduler
// ticks (tickInUsec ticks per µs, from /proc/net/psched) and the loss as a
// fraction of 2^32−1 (vishvananda/netlink returns both raw, issue #480).
func fromNetem(q *netlink.Netem, tickInUsec float64) Applied {
	us := float64(q.Latency) / tickInUsec
	jitter := float64(q.Jitter) / tickInUsec
	return Applied{
		Delay:   time.Duration(math.Round(us)) * time.Microsecond,
		Jitter:  time.Duration(math.Round(jitter)) * time.Microsecond,
		RateBps: q.Rate64 * 8,
		LossPct: roundTo(float64(q.Loss)/math.MaxUint32*100, 6),
		Limit:   int(q.Limit),
	}
}

func netemCounters(st *netlink.QdiscStatistics) Counters {
	var c Counters
	if st == nil {
		return c
	}
	if st.Basic != nil {
		c.Sent, c.SentBytes = uint64(st.Basic.Packets), st.Basic.Bytes
	}
	if st.Queue != nil {
		c.Dropped = uint64(st.Queue.Drops)
		c.Overlimits = uint64(st.Queue.Overlimits)
		c.Requeues = uint64(st.Queue.Requeues)
		c.Backlog = uint64(st.Queue.Qlen)
		c.BacklogBytes = uint64(st.Queue.Backlog)
	}
	return c
}
