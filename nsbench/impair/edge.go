package impair

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// Edges is the userspace impairment for roles on their own hosts: each
// impaired role's egress passes a forwarder on that role's host, between
// its eth0 and the wire (topology's edge: eth0 ⇄ wan0 ⇄ wire0). The
// forwarder is a daemon of the role, started and stopped through it (so
// the host's agent stops it when the run's session ends), and its control
// socket sits in the role's private directory there; the ops below split
// and join the pipe and read the forwarder's status on that host.
//
// Set: for each role, stop its forwarder → split the pipe → start the
// forwarder on wan0 (impaired: the role's egress) and wire0 → read its
// configuration back. Clear: stop the forwarders → join the pipes.
type Edges struct {
	edges      []*edge
	rtPriority int
}

type edge struct {
	r      *role.Role // whose egress; its leaf holds the forwarder
	stream uint64     // its loss sequence, apart from every other edge's
	fwd    *proc.Process
}

var _ Impairment = (*Edges)(nil)

// NewEdges impairs the egress of every role in roles, each on its own host
// (built with an edge), the forwarders' threads SCHED_FIFO at rtPriority
// when positive. It changes nothing until Set.
func NewEdges(roles []*role.Role, rtPriority int) *Edges {
	e := &Edges{rtPriority: rtPriority}
	for i, r := range roles {
		e.edges = append(e.edges, &edge{r: r, stream: uint64(i)})
	}
	return e
}

func (*Edges) Method() string { return MethodUserspace }

var (
	edgeSplitOp = role.NewOp("impair.edge-split", func(context.Context, role.Nothing) (role.Nothing, error) {
		return role.Nothing{}, topology.SplitPipe()
	})
	edgeJoinOp = role.NewOp("impair.edge-join", func(context.Context, role.Nothing) (role.Nothing, error) {
		return role.Nothing{}, topology.JoinPipe()
	})
	// edgeStatusOp asks the forwarder on the role's host for its status.
	edgeStatusOp = role.NewOp("impair.edge-status", func(ctx context.Context, control string) (Status, error) {
		if err := role.CheckPath(ctx, control); err != nil {
			return Status{}, err
		}
		return forwarderStatus(control)
	})
)

// forwarderStatus asks the forwarder at control for its configuration and
// counters.
func forwarderStatus(control string) (Status, error) {
	c, err := net.DialTimeout("unix", control, time.Second)
	if err != nil {
		return Status{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	var st Status
	if err := json.NewDecoder(c).Decode(&st); err != nil {
		return Status{}, fmt.Errorf("read forwarder status: %w", err)
	}
	return st, nil
}

func (e *edge) control() string { return filepath.Join(e.r.Dir(), "impair.sock") }

// Set starts every role's forwarder with c in place of its pipe.
func (e *Edges) Set(ctx context.Context, c Condition) ([]Applied, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Narrow.MTU > 0 {
		return nil, fmt.Errorf("userspace impairment across hosts: %w", ErrNarrowAcrossHosts)
	}
	applied := make([][]Applied, len(e.edges))
	errs := make([]error, len(e.edges))
	var wg sync.WaitGroup
	for i, ed := range e.edges {
		wg.Go(func() { applied[i], errs[i] = ed.set(ctx, c, e.rtPriority) })
	}
	wg.Wait()
	var all []Applied
	for _, a := range applied {
		all = append(all, a...)
	}
	return all, errors.Join(errs...)
}

// ErrNarrowAcrossHosts refuses a narrow hop across hosts: there is no
// switch between the hosts that twnsbench owns.
var ErrNarrowAcrossHosts = errors.New("a narrow hop (mtu=) needs the one-host switch: not with --host")

func (ed *edge) set(ctx context.Context, c Condition, rt int) ([]Applied, error) {
	name := ed.r.Name()
	if err := ed.stop(); err != nil {
		return nil, err
	}
	if _, err := edgeSplitOp.On(ctx, ed.r, role.Nothing{}); err != nil {
		return nil, fmt.Errorf("userspace impairment: %w", err)
	}
	spec := ForwarderConfig{Control: ed.control(), RTPriority: rt, Ports: []PortConfig{
		{Name: topology.EdgeLink, Role: name, Impaired: true, DelayNs: int64(c.OneWay()), JitterNs: int64(c.Jitter),
			RateBps: c.RateBps, LossPct: c.LossPct, Limit: c.QueueLimit(), Seed: c.Seed, Stream: ed.stream},
		{Name: topology.WireLink, Role: "wire"},
	}}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("userspace impairment: %w", err)
	}
	p, err := ed.r.Start(ctx, ed.r.Program(ForwarderArg, ed.r.Self(), ForwarderArg, "--spec", string(b)))
	if err != nil {
		return nil, fmt.Errorf("userspace impairment on %s's host: %w", name, err)
	}
	ed.fwd = p
	st, err := ed.waitReady(ctx)
	if err != nil {
		return nil, err
	}
	var applied []Applied
	for _, s := range st.Ports {
		if !s.Impaired {
			continue
		}
		seed := s.Seed
		a := Applied{Role: s.Role, Where: name + " " + s.Name, Delay: time.Duration(s.DelayNs),
			Jitter: time.Duration(s.JitterNs), RateBps: s.RateBps, LossPct: s.LossPct, Limit: s.Limit, Seed: &seed}
		if err := a.matches(c); err != nil {
			return applied, fmt.Errorf("userspace impairment: %w", err)
		}
		applied = append(applied, a)
	}
	if len(applied) != 1 {
		return applied, fmt.Errorf("userspace impairment on %s's host: %d impaired ports, want 1", name, len(applied))
	}
	return applied, nil
}

// waitReady polls the forwarder's control socket through the role until it
// answers, or the forwarder exits first.
func (ed *edge) waitReady(ctx context.Context) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		st, err := edgeStatusOp.On(ctx, ed.r, ed.control())
		if err == nil {
			return st, nil
		}
		select {
		case <-ed.fwd.Done():
			return Status{}, fmt.Errorf("userspace impairment on %s's host: the forwarder exited: %v", ed.r.Name(), ed.fwd.Err())
		case <-ctx.Done():
			return Status{}, fmt.Errorf("userspace impairment on %s's host: the forwarder did not answer on %s: %w (last: %v)",
				ed.r.Name(), ed.control(), ctx.Err(), err)
		case <-time.After(delay):
		}
	}
}

// Counters asks every forwarder for its impaired port's counters.
func (e *Edges) Counters(ctx context.Context) ([]Counters, error) {
	var out []Counters
	for _, ed := range e.edges {
		if ed.fwd == nil {
			return nil, errors.New("userspace impairment: not set")
		}
		st, err := edgeStatusOp.On(ctx, ed.r, ed.control())
		if err != nil {
			return nil, fmt.Errorf("userspace impairment: %w", err)
		}
		for _, c := range portCounters(st) {
			c.Where = ed.r.Name() + " " + topology.EdgeLink
			out = append(out, c)
		}
	}
	return out, nil
}

// Clear stops every forwarder and joins every pipe again.
func (e *Edges) Clear(ctx context.Context) error {
	errs := make([]error, len(e.edges))
	var wg sync.WaitGroup
	for i, ed := range e.edges {
		wg.Go(func() {
			errs[i] = ed.stop()
			if _, err := edgeJoinOp.On(ctx, ed.r, role.Nothing{}); err != nil {
				errs[i] = errors.Join(errs[i], fmt.Errorf("userspace impairment: %w", err))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (ed *edge) stop() error {
	if ed.fwd == nil {
		return nil
	}
	err := ed.fwd.Stop(stopGrace)
	ed.fwd = nil
	if err != nil {
		return fmt.Errorf("userspace impairment on %s's host: %w", ed.r.Name(), err)
	}
	return nil
}
