package nsbench

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/textsafe"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// Sites are the machines of a run across hosts, each reached once for the
// whole run: one SSH connection, one copy of twnsbench and one agent per
// role's host, named for the run. The run checks the rows named one by
// one through these agents before anything is built, builds its roles
// with them, reads their facts and noise, and ends them: an agent removes
// what it built when its session ends. Options stay data (Hosts); Sites
// are what a run holds.
type Sites struct {
	prefix string
	sites  []Site       // the inventory's order
	fan    []hosts.Host // the sweep's clients on the client's host (Hosts.Fan)
	close  sync.Once
	err    error // of Close
}

// Site is one role's host, reached and serving: its connection, its copy
// of twnsbench (and the builds' programs beside it) and its agent. A run holds one per role's host (Sites);
// doctor and clean --host open one per host apart (OpenSite).
type Site struct {
	host  hosts.Host
	conn  *remote.Conn // nil for this machine (ROLE=local)
	ifc   remote.Iface
	cp    *remote.Copy // nil for this machine
	agent *remote.AgentSession
	// copies are the builds' programs copied beside cp, by their path on
	// this machine (CopyBuilds).
	copies map[string]results.ProgramCopy
}

// OpenSites reaches every host of h at once and checks each — host key,
// login, root, its interface, the role's address on that interface's
// network — then copies twnsbench to each and starts its agent, under a
// new run's prefix. Nothing is built yet. An error names every host that
// failed, and whatever was opened is closed again.
func OpenSites(ctx context.Context, h Hosts) (*Sites, error) {
	prefix, err := topology.NewPrefix()
	if err != nil {
		return nil, err
	}
	s := &Sites{prefix: prefix, sites: make([]Site, len(h.Inventory.Hosts)), fan: h.Fan}
	for i, host := range h.Inventory.Hosts {
		s.sites[i].host = host
	}
	if err := s.reach(ctx, h.SSH); err != nil {
		s.Close()
		return nil, err
	}
	errs := make([]error, len(s.sites))
	var wg sync.WaitGroup
	for i := range s.sites {
		wg.Go(func() { errs[i] = s.sites[i].serve(ctx, prefix) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// On reports whether the run has sites: its roles on other hosts.
func (s *Sites) On() bool { return s != nil }

// Prefix is the run's prefix, which everything of it is named with.
func (s *Sites) Prefix() string { return s.prefix }

// reach connects to every host at once; a role on this machine stands on
// the interface this machine reaches the other hosts from (or the one
// named).
func (s *Sites) reach(ctx context.Context, cfg remote.Config) error {
	errs := make([]error, len(s.sites))
	var wg sync.WaitGroup
	for i := range s.sites {
		if st := &s.sites[i]; !st.host.Local {
			wg.Go(func() { errs[i] = st.dial(ctx, cfg) })
		}
	}
	wg.Wait()
	var from netip.Addr
	for _, st := range s.sites {
		if st.conn != nil {
			from = st.conn.LocalAddr()
			break
		}
	}
	for i := range s.sites {
		st := &s.sites[i]
		if st.host.Local {
			ifc, err := remote.LocalIface(ctx, st.host.Iface, from)
			if err == nil {
				err = onNetwork(st.host, ifc)
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", st.host.Role, err)
			}
			st.ifc = ifc
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return errors.Join(s.addrsTaken(from)...)
}

func (st *Site) dial(ctx context.Context, cfg remote.Config) error {
	conn, err := remote.Dial(ctx, cfg, st.host)
	if err != nil {
		return fmt.Errorf("%s: %w", st.host.Role, err)
	}
	st.conn = conn
	if st.ifc, err = conn.Iface(ctx); err == nil {
		err = onNetwork(st.host, st.ifc)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", st.host.Role, err)
	}
	return nil
}

// addrsTaken refuses a role address that a machine of the run holds: a
// host's own on its interface, or from, this machine's (a role holding
// it would answer ARP for it and cut that machine off). Addresses of
// machines outside the run are found by the role's ARP probe.
func (s *Sites) addrsTaken(from netip.Addr) []error {
	taken := map[netip.Addr]string{}
	if from.IsValid() {
		taken[from.Unmap()] = "this machine's address"
	}
	for _, st := range s.sites {
		for _, p := range st.ifc.IPv4 {
			taken[p.Addr()] = st.host.Dest() + "'s own address on " + textsafe.Quote(st.ifc.Name)
		}
	}
	var errs []error
	roles := make([]hosts.Host, 0, len(s.sites)+len(s.fan))
	for _, st := range s.sites {
		roles = append(roles, st.host)
	}
	if len(s.fan) > 1 {
		roles = append(roles, s.fan[1:]...) // the first is the client's own
	}
	for _, h := range roles {
		if who, ok := taken[h.RoleAddr.Addr()]; ok {
			errs = append(errs, fmt.Errorf("%s: %s: addr %s is %s: give the role a free address", h.Role, h.Dest(), h.RoleAddr.Addr(), who))
		}
	}
	return errs
}

// onNetwork checks that the role's address is on the network of the
// interface it will stand on (a command that names none, doctor or
// clean, has nothing to check).
func onNetwork(h hosts.Host, ifc remote.Iface) error {
	if h.RoleAddr.IsValid() && !slices.ContainsFunc(ifc.IPv4, func(p netip.Prefix) bool { return p.Masked() == h.RoleAddr.Masked() }) {
		return fmt.Errorf("%s: addr %s is not on the network of %s (%v)", h.Dest(), h.RoleAddr, textsafe.Quote(ifc.Name), ifc.IPv4)
	}
	return nil
}

// serve starts the site's agent for its role: this binary itself for a
// role on this machine, else a verified copy on the host.
func (st *Site) serve(ctx context.Context, prefix string) error {
	var err error
	if !st.host.Local {
		st.cp, err = st.conn.Install(ctx, prefix)
	}
	if err == nil {
		st.agent, err = st.startAgent(st.host.Role+" "+st.host.Dest(), role.Scope(prefix, st.host.Role))
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", st.host.Role, st.host.Dest(), err)
	}
	return nil
}

// CheckNamed refuses rows named one by one that cannot run on the host of
// a role they use (the client, the server and those they need), each
// checked there as built from rc, the builds' programs at their copies
// there (CopyBuilds first): the programs, modules and paths of the
// machines that will run it. A default row that cannot run is skipped by
// the run instead.
func (s *Sites) CheckNamed(ctx context.Context, named []transport.Transport, rc transport.Recipe) error {
	var refusals []string
	for _, st := range s.sites {
		var reasons []string
		for _, t := range named {
			if !slices.Contains(transport.RolesOf(t), st.host.Role) {
				continue
			}
			why, err := transport.CheckOnMachine(ctx, st.agent.Wire, t.Name(), st.recipe(rc))
			if err != nil {
				return fmt.Errorf("%s: %s: check %s: %w", st.host.Role, st.host.Dest(), t.Name(), err)
			}
			if why != "" {
				reasons = append(reasons, fmt.Sprintf("%s cannot run there: %s", t.Name(), textsafe.Quote(why))) // the host's words
			}
		}
		if len(reasons) > 0 {
			refusals = append(refusals, fmt.Sprintf("%s: %s: --transports: %s", st.host.Role, st.host.Dest(), strings.Join(reasons, "; ")))
		}
	}
	if len(refusals) > 0 {
		return errors.New(strings.Join(refusals, "; ")) // one line: a refusal
	}
	return nil
}

// Close ends every agent (each removes what it built), removes the copies
// and closes the connections; safe to call again.
func (s *Sites) Close() error {
	if s == nil {
		return nil
	}
	s.close.Do(func() {
		var errs []error
		for i := range s.sites {
			errs = append(errs, s.sites[i].Close())
		}
		s.err = errors.Join(errs...)
	})
	return s.err
}

// OpenSite reaches host h and starts its agent under prefix: the steps
// OpenSites takes for each host, for a command that works on each host
// apart (doctor and clean --host), where one host's failure does not stop
// the others. The caller closes it.
func OpenSite(ctx context.Context, cfg remote.Config, h hosts.Host, prefix string) (*Site, error) {
	st := &Site{host: h}
	err := st.dial(ctx, cfg)
	if err == nil {
		err = st.serve(ctx, prefix)
	}
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	return st, nil
}

// Agent is the wire to the site's agent: host ops on the machine.
func (st *Site) Agent() *role.Wire { return st.agent.Wire }

// Iface is the host's interface the site's role stands on.
func (st *Site) Iface() remote.Iface { return st.ifc }

// Close ends the agent (it removes what it built), removes the copy and
// closes the connection, each once.
func (st *Site) Close() error {
	var errs []error
	if st.agent != nil {
		if err := st.agent.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", st.host.Role, st.host.Dest(), err))
		}
		st.agent = nil
	}
	if st.cp != nil {
		if err := st.cp.Remove(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", st.host.Role, err))
		}
		st.cp = nil
	}
	if st.conn != nil {
		st.conn.Close()
		st.conn = nil
	}
	return errors.Join(errs...)
}
