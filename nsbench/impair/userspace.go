package impair

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// Port is one switch port the userspace impairment takes over.
type Port struct {
	Name     string // the port's interface in the switch namespace
	Role     string // the role on its other end
	Impaired bool   // the role's egress gets the condition
}

// UserspaceConfig says where the forwarder runs and what it joins.
type UserspaceConfig struct {
	Switch *ns.NS // the namespace holding the bridge and the ports
	Ports  []Port
	// Control is the forwarder's unix socket (in the run's private
	// directory).
	Control string
	// Process says how the forwarder is started: NetNS (the switch's),
	// Cgroup, Log and Name. Argv is filled in by Set.
	Process proc.Program
	// Binary has the hidden ForwarderArg subcommand; "" is this program.
	Binary string
	// RTPriority, when positive, runs the forwarder's threads SCHED_FIFO
	// at that priority (DefaultRTPriority is what a run uses).
	RTPriority int
}

// DefaultRTPriority is the forwarder's SCHED_FIFO priority: low among
// real-time priorities, above every ordinary process.
const DefaultRTPriority = 10

// Userspace is the mechanism for kernels without sch_netem: the forwarder
// process in the switch namespace, in place of the bridge while a
// condition is set.
//
// Set: detach the ports from the bridge (once) → stop a previous
// forwarder → start the forwarder → wait for its control socket → read its
// configuration back. Clear: stop the forwarder → put the ports back on the
// bridge. While the ports are between the two, nothing connects the roles:
// a few frames are lost at each switch-over, and TCP recovers them.
type Userspace struct {
	cfg UserspaceConfig
	fwd *proc.Process
	// masters holds each detached port's bridge (ifindex), to put it back
	// on; nil while the ports are on their bridges.
	masters map[string]int
}

var (
	_ Impairment = (*Userspace)(nil)
	_ NarrowPath = (*Userspace)(nil)
)

// NewUserspace prepares the mechanism; it changes nothing until Set.
func NewUserspace(cfg UserspaceConfig) *Userspace { return &Userspace{cfg: cfg} }

func (*Userspace) Method() string { return MethodUserspace }

// readyTimeout bounds the wait for a starting forwarder's control socket.
const readyTimeout = 10 * time.Second

// stopGrace is how long a forwarder gets to exit after SIGTERM (its
// readers notice within rxTimeout, its releasers after their current
// delay).
const stopGrace = MaxRTT/2 + 2*time.Second

// Set starts a forwarder with c in place of the bridge, replacing a
// running one (which restarts the loss sequence).
func (u *Userspace) Set(ctx context.Context, c Condition) ([]Applied, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := u.stop(); err != nil {
		return nil, err
	}
	if err := u.detach(); err != nil {
		return nil, err
	}
	spec := u.spec(c)
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("userspace impairment: %w", err)
	}
	bin := u.cfg.Binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("userspace impairment: find own binary: %w", err)
		}
	}
	ps := u.cfg.Process
	ps.Argv = []string{bin, ForwarderArg, "--spec", string(b)}
	p, err := proc.Start(ps)
	if err != nil {
		return nil, fmt.Errorf("userspace impairment: %w", err)
	}
	u.fwd = p
	st, err := u.waitReady(ctx)
	if err != nil {
		return nil, err
	}
	if st.Narrow != c.Narrow {
		return nil, fmt.Errorf("userspace impairment: the forwarder holds narrow hop %+v, want %+v", st.Narrow, c.Narrow)
	}
	var applied []Applied
	for _, s := range st.Ports {
		if !s.Impaired {
			continue
		}
		seed := s.Seed
		a := Applied{Role: s.Role, Where: "switch port " + s.Name, Delay: time.Duration(s.DelayNs),
			Jitter: time.Duration(s.JitterNs), RateBps: s.RateBps, LossPct: s.LossPct, Limit: s.Limit, Seed: &seed}
		if err := a.matches(c); err != nil {
			return applied, fmt.Errorf("userspace impairment: %w", err)
		}
		applied = append(applied, a)
	}
	return applied, nil
}

// spec is the forwarder's configuration for c. The impaired ports are
// numbered in order for their loss streams, so the client's egress and
// the server's draw independent sequences from one seed.
func (u *Userspace) spec(c Condition) ForwarderConfig {
	s := ForwarderConfig{Control: u.cfg.Control, RTPriority: u.cfg.RTPriority, Narrow: c.Narrow}
	var stream uint64
	for _, p := range u.cfg.Ports {
		ps := PortConfig{Name: p.Name, Role: p.Role, Impaired: p.Impaired}
		if p.Impaired {
			ps.DelayNs = int64(c.OneWay())
			ps.JitterNs = int64(c.Jitter)
			ps.RateBps = c.RateBps
			ps.LossPct = c.LossPct
			ps.Limit = c.QueueLimit()
			ps.Seed = c.Seed
			ps.Stream = stream
			stream++
		}
		s.Ports = append(s.Ports, ps)
	}
	return s
}

// waitReady polls the control socket until the forwarder answers, quoting
// its log when it exits first.
func (u *Userspace) waitReady(ctx context.Context) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		st, err := u.status()
		if err == nil {
			return st, nil
		}
		select {
		case <-u.fwd.Done():
			return Status{}, fmt.Errorf("userspace impairment: the forwarder exited: %v (log: %s)", u.fwd.Err(), u.cfg.Process.Log)
		case <-ctx.Done():
			return Status{}, fmt.Errorf("userspace impairment: the forwarder did not answer on %s: %w (last: %v; log: %s)",
				u.cfg.Control, ctx.Err(), err, u.cfg.Process.Log)
		case <-time.After(delay):
		}
	}
}

// status asks the forwarder for its configuration and counters.
func (u *Userspace) status() (Status, error) { return forwarderStatus(u.cfg.Control) }

// Counters asks the forwarder for each impaired port's counters.
func (u *Userspace) Counters(ctx context.Context) ([]Counters, error) {
	if u.fwd == nil {
		return nil, errors.New("userspace impairment: not set")
	}
	st, err := u.status()
	if err != nil {
		return nil, fmt.Errorf("userspace impairment: %w", err)
	}
	return portCounters(st), nil
}

// Narrow asks the forwarder for the narrow hop's counts, summed over
// every port.
func (u *Userspace) Narrow(ctx context.Context) (NarrowCounts, error) {
	if u.fwd == nil {
		return NarrowCounts{}, errors.New("userspace impairment: not set")
	}
	st, err := u.status()
	if err != nil {
		return NarrowCounts{}, fmt.Errorf("userspace impairment: %w", err)
	}
	var n NarrowCounts
	for _, p := range st.Ports {
		n = n.Add(p.Narrow)
	}
	return n, nil
}

func portCounters(st Status) []Counters {
	var out []Counters
	for _, p := range st.Ports {
		if !p.Impaired {
			continue
		}
		out = append(out, Counters{
			Role: p.Role, Where: "switch port " + p.Name,
			Sent: p.Forwarded, SentBytes: p.ForwardedBytes,
			Dropped:    p.LossDrops + p.QueueDrops,
			Overlimits: p.QueueDrops,
			Backlog:    uint64(p.Backlog), BacklogBytes: p.BacklogBytes,
			LostOutside: LostOutside{SocketDrops: p.SocketDrops, SendErrors: p.SendErrors},
		})
	}
	return out
}

// Clear stops the forwarder and puts the ports back on the bridge.
func (u *Userspace) Clear(ctx context.Context) error {
	return errors.Join(u.stop(), u.attach())
}

func (u *Userspace) stop() error {
	if u.fwd == nil {
		return nil
	}
	err := u.fwd.Stop(stopGrace)
	u.fwd = nil
	if err != nil {
		return fmt.Errorf("userspace impairment: %w", err)
	}
	return nil
}

// detach takes the ports off their bridge; the forwarder joins them
// instead. It remembers each port's bridge for attach.
func (u *Userspace) detach() error {
	if u.masters != nil {
		return nil
	}
	h, err := u.cfg.Switch.Netlink()
	if err != nil {
		return err
	}
	defer h.Close()
	u.masters = map[string]int{} // from the first change on, Clear must put the ports back
	for _, p := range u.cfg.Ports {
		l, err := h.LinkByName(p.Name)
		if err != nil {
			return fmt.Errorf("userspace impairment: port %s: %w", p.Name, err)
		}
		master := l.Attrs().MasterIndex
		if master == 0 {
			return fmt.Errorf("userspace impairment: port %s is on no bridge", p.Name)
		}
		if err := h.LinkSetNoMaster(l); err != nil {
			return fmt.Errorf("userspace impairment: detach %s from its bridge: %w", p.Name, err)
		}
		u.masters[p.Name] = master
	}
	return nil
}

// attach puts every detached port back on its bridge.
func (u *Userspace) attach() error {
	if u.masters == nil {
		return nil
	}
	h, err := u.cfg.Switch.Netlink()
	if err != nil {
		return err
	}
	defer h.Close()
	var errs []error
	for _, p := range u.cfg.Ports {
		master, ok := u.masters[p.Name]
		if !ok {
			continue
		}
		l, err := h.LinkByName(p.Name)
		if err == nil {
			err = h.LinkSetMasterByIndex(l, master)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("userspace impairment: put %s back on its bridge: %w", p.Name, err))
			continue
		}
		delete(u.masters, p.Name)
	}
	if len(u.masters) == 0 {
		u.masters = nil
	}
	return errors.Join(errs...)
}
