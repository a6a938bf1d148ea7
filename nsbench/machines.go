package nsbench

import (
	"context"
	"slices"
	"sync"

	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// machine is a machine the run's roles stand on, as the Environment
// describes it: this one on one host, each host across hosts. Every
// run's machines are read by the same code, through host ops carried out
// on each (role.Machine): in this process here, by the agent there.
type machine struct {
	on    role.Machine
	login string   // hosts.LocalName for this machine
	iface string   // the interface its roles stand on; "" for veths
	roles []string // the roles it holds
	links topology.LinkFacts
}

// thisMachine is the machine of a run on one host: every role of spec,
// on veths whose links were built as links says.
func thisMachine(spec topology.Spec, links topology.LinkFacts) machine {
	return machine{on: role.Here, login: hosts.LocalName, roles: spec.Roles, links: links}
}

// hostMachines are the machines of a run across hosts, one per role, in
// the inventory's order (two roles on one machine are merged by
// results.Env.AddHost).
func hostMachines(built []hostedRole) []machine {
	ms := make([]machine, len(built))
	for i, b := range built {
		ms[i] = machine{on: b.conn, login: b.host.Dest(), iface: b.iface, roles: []string{b.host.Role}, links: b.built.LinkFacts}
	}
	return ms
}

// readMachines reads every machine's facts at once (preflight.HostFacts:
// kernel, CPU, cores, its interface, the versions of its roles' tools)
// with the settings its role links were built with. Facts only describe
// the run: one that cannot be read is left out, and logged.
func readMachines(ctx context.Context, ms []machine, programs map[string][]preflight.Tool, logf Logf) []results.Host {
	out := make([]results.Host, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			var tools []preflight.Tool
			for _, r := range m.roles {
				for _, t := range append(preflight.RoleTools(r), programs[r]...) {
					if !slices.ContainsFunc(tools, func(u preflight.Tool) bool { return u.Name == t.Name }) {
						tools = append(tools, t)
					}
				}
			}
			h, err := preflight.HostFacts(ctx, m.on, m.iface, tools)
			if err != nil {
				logf("%s: recorded without what could not be read: %v", m.login, err)
			}
			h.Roles, h.Login, h.Iface = m.roles, m.login, m.iface
			h.RoleLinks = &results.RoleLinks{Offloads: m.links.Offloads, Congestion: m.links.Congestion, SysctlChanges: m.links.SysctlChanges}
			out[i] = h
		})
	}
	wg.Wait()
	return out
}
