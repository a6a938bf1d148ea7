package nsbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// roleSite is one role to build on a host: the host as the role has it
// (its name and address), the interface it stands on, and the wire to
// the agent that builds it and removes it when its session ends.
type roleSite struct {
	host hosts.Host
	ifc  remote.Iface
	wire *role.Wire
}

// roleSites are a run's roles, each built by its site's own agent,
// which lives as long as the run.
func (s *Sites) roleSites() []roleSite {
	rs := make([]roleSite, len(s.sites))
	for i, st := range s.sites {
		rs[i] = roleSite{host: st.host, ifc: st.ifc, wire: st.agent.Wire}
	}
	return rs
}

// bedAgents starts an agent of its own for each role of spec, the roles
// of one of the many-client sweep's testbeds named with its prefix, on
// the site of the host that holds the role: the client's for every client
// (Hosts.Fan). The sites' connections and copies serve every testbed of
// the sweep; the agents only this one, so that closing them (the
// returned func, for the testbed's teardown) removes its roles as the end
// of a run's agents removes a run's.
func (s *Sites) bedAgents(prefix string, spec topology.Spec) ([]roleSite, func(context.Context) error, error) {
	var rs []roleSite
	var sessions []*remote.AgentSession
	closeAll := func(context.Context) error { return closeBedAgents(rs, sessions) }
	for _, r := range spec.Roles {
		st, h, err := s.holding(r)
		if err == nil {
			var a *remote.AgentSession
			if a, err = st.startAgent(h.Role+" "+h.Dest(), role.Scope(prefix, r)); err == nil {
				rs, sessions = append(rs, roleSite{host: h, ifc: st.ifc, wire: a.Wire}), append(sessions, a)
				continue
			}
		}
		return nil, nil, errors.Join(err, closeAll(context.Background()))
	}
	return rs, closeAll, nil
}

// holding is the site of the host that holds role r, and the host as r
// has it.
func (s *Sites) holding(r string) (*Site, hosts.Host, error) {
	h, ok := hosts.Host{}, false
	if i := slices.IndexFunc(s.fan, func(f hosts.Host) bool { return f.Role == r }); i >= 0 {
		h, ok = s.fan[i], true
	}
	for i := range s.sites {
		st := &s.sites[i]
		if st.host.Role == r {
			return st, st.host, nil
		}
		if ok && st.host.Role == topology.Client {
			return st, h, nil
		}
	}
	return nil, hosts.Host{}, fmt.Errorf("%s: no host of the run holds it (--host %s=USER@HOST,addr=A.B.C.D/NN)", r, r)
}

// closeBedAgents ends a testbed's agents, each of which removes what it
// built, in closeGroups' order.
func closeBedAgents(rs []roleSite, sessions []*remote.AgentSession) error {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.host.Role
	}
	var errs []error
	for _, group := range closeGroups(names) {
		gerrs := make([]error, len(group))
		var wg sync.WaitGroup
		for j, i := range group {
			wg.Go(func() {
				if err := sessions[i].Close(); err != nil {
					gerrs[j] = fmt.Errorf("%s %s: %w", rs[i].host.Role, rs[i].host.Dest(), err)
				}
			})
		}
		wg.Wait()
		errs = append(errs, gerrs...)
	}
	return errors.Join(errs...)
}

// closeGroups orders the ends of agents of roles names: the longest names
// first, at once among names of one length. An agent removes every name
// that begins with its scope, so client2's end would take client20's role
// from under client20's own agent; no name begins another of its length.
func closeGroups(names []string) [][]int {
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(names[b]), len(names[a])) })
	var groups [][]int
	for i, at := range order {
		if i == 0 || len(names[at]) != len(names[order[i-1]]) {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], at)
	}
	return groups
}

// startAgent starts an agent of scope on the site's host: this binary
// itself for a role on this machine, else the site's verified copy there,
// over its connection.
func (st *Site) startAgent(name, scope string) (*remote.AgentSession, error) {
	if st.host.Local {
		return remote.StartLocalAgent(name, scope)
	}
	return st.conn.StartAgent(st.cp, scope)
}
