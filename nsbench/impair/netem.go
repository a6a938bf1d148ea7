package impair

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// NetemSeedNote says why netem's loss is not paired across transports.
const NetemSeedNote = "netem's PRNG seed is not set: vishvananda/netlink cannot send TCA_NETEM_PRNG_SEED " +
	"(and kernels before 6.3 lack it), so each transport sees its own loss positions"

// Target is one impaired egress interface.
type Target struct {
	Role string // whose egress
	NS   *ns.NS
	Link string // the interface inside NS, e.g. "eth0"
}

// Netem is the kernel mechanism: a netem qdisc at the root of each
// target's interface, managed through netlink handles bound to the
// targets' namespaces.
type Netem struct {
	targets []Target
}

var _ Impairment = (*Netem)(nil)

// NewNetem impairs the egress of every target. It creates nothing until Set.
func NewNetem(targets []Target) *Netem { return &Netem{targets: targets} }

func (*Netem) Method() string { return MethodNetem }

// netemHandle is the qdisc handle twnsbench gives its netem ("1:").
var netemHandle = netlink.MakeHandle(1, 0)

// Set replaces the root qdisc of every target with netem holding c and
// reads it back. QdiscReplace makes a repeated Set harmless.
func (n *Netem) Set(ctx context.Context, c Condition) ([]Applied, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var applied []Applied
	for _, t := range n.targets {
		a, err := n.set(t, c)
		if err != nil {
			return applied, err
		}
		applied = append(applied, a)
	}
	return applied, nil
}

func (n *Netem) set(t Target, c Condition) (Applied, error) {
	h, link, err := t.open()
	if err != nil {
		return Applied{}, err
	}
	defer h.Close()
	q := netlink.NewNetem(netlink.QdiscAttrs{
		LinkIndex: link.Attrs().Index,
		Handle:    netemHandle,
		Parent:    netlink.HANDLE_ROOT,
	}, netemAttrs(c))
	if err := h.QdiscReplace(q); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
			err = fmt.Errorf("%w (%v): the kernel has no sch_netem", ErrUnsupported, err)
		}
		return Applied{}, fmt.Errorf("netem on %s %s: %w", t.Role, t.Link, err)
	}
	got, err := rootNetem(h, link)
	if err != nil {
		return Applied{}, fmt.Errorf("netem on %s %s: read back: %w", t.Role, t.Link, err)
	}
	if got == nil {
		return Applied{}, fmt.Errorf("netem on %s %s: read back: no netem at the root after replace", t.Role, t.Link)
	}
	a := fromNetem(got, netlink.TickInUsec())
	a.Role, a.Where = t.Role, t.Role+" "+t.Link
	return a, a.matches(c)
}

// Counters reads each target's netem statistics.
func (n *Netem) Counters(ctx context.Context) ([]Counters, error) {
	var out []Counters
	for _, t := range n.targets {
		c, err := t.counters()
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (t Target) counters() (Counters, error) {
	h, link, err := t.open()
	if err != nil {
		return Counters{}, err
	}
	defer h.Close()
	q, err := rootNetem(h, link)
	if err != nil {
		return Counters{}, fmt.Errorf("netem statistics of %s %s: %w", t.Role, t.Link, err)
	}
	if q == nil {
		return Counters{}, fmt.Errorf("netem statistics of %s %s: no netem qdisc", t.Role, t.Link)
	}
	c := netemCounters(q.Attrs().Statistics)
	c.Role, c.Where = t.Role, t.Role+" "+t.Link
	return c, nil
}

// Clear deletes every target's netem; the interface falls back to its
// default qdisc. A target without netem is left alone.
func (n *Netem) Clear(ctx context.Context) error {
	var errs []error
	for _, t := range n.targets {
		errs = append(errs, t.clear())
	}
	return errors.Join(errs...)
}

func (t Target) clear() error {
	h, link, err := t.open()
	if err != nil {
		if errors.Is(err, errNoLink) {
			return nil // the namespace or link is gone: nothing to clear
		}
		return err
	}
	defer h.Close()
	q, err := rootNetem(h, link)
	if err != nil || q == nil {
		return err
	}
	if err := h.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("remove netem from %s %s: %w", t.Role, t.Link, err)
	}
	return nil
}

var errNoLink = errors.New("no such link")

func (t Target) open() (*netlink.Handle, netlink.Link, error) {
	h, err := t.NS.Netlink()
	if err != nil {
		return nil, nil, err
	}
	link, err := h.LinkByName(t.Link)
	if err != nil {
		h.Close()
		return nil, nil, fmt.Errorf("%s %s: %w: %v", t.Role, t.Link, errNoLink, err)
	}
	return h, link, nil
}

// rootNetem returns the netem at link's root, or nil when there is none.
func rootNetem(h *netlink.Handle, link netlink.Link) (*netlink.Netem, error) {
	qs, err := h.QdiscList(link)
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
