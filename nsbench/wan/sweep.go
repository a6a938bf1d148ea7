package wan

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/stats"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// The many-client sweep under a WAN condition. Each transport and N under
// a condition gets a testbed of its own, on which the condition is set
// before the clients' paths come up, as a run's WAN block:
//
//	bed up → probes' ends → Set (netem on every client's and the server's
//	eth0, or the forwarder in place of the bridge with every client's port
//	and the server's impaired) → paths → probe (the run's RTT and loss
//	probes from the first client, an RTT probe from every client) → load →
//	verify (the impairment's counters, judged as a run's cell) → Clear
//
// The server's egress is one port (one netem qdisc) that every client's
// traffic from the server crosses, the sweep's shared WAN link.

// Sweep is how a sweep's WAN conditions are made here, chosen once for
// the sweep, and the loss seed they share.
type Sweep struct {
	conds  map[string]impair.Condition
	method string // impair.MethodNetem or impair.MethodUserspace
	seed   uint64
	logf   func(format string, args ...any)
}

// NewSweep chooses the mechanism of plan's WAN conditions and states
// them in doc (the conditions, the method and its settings, a fallback);
// nil without a WAN condition.
func NewSweep(plan Plan, doc *results.Clients, logf func(format string, args ...any)) (*Sweep, error) {
	if len(plan.Profiles) == 0 {
		return nil, nil
	}
	sw := &Sweep{conds: map[string]impair.Condition{}, seed: rand.Uint64(), logf: logf}
	if plan.Seed != nil {
		sw.seed = *plan.Seed
	}
	var specs []string
	w := &Run{conds: sw.conds, seed: sw.seed}
	for _, p := range plan.Profiles {
		c := p.Condition(sw.seed)
		sw.conds[p.Name] = c
		w.order = append(w.order, p.Name)
		specs = append(specs, c.String())
		doc.Conditions = append(doc.Conditions, results.Condition{Name: p.Name, Label: p.Label(), Profile: ProfileOf(c)})
	}
	doc.Env.WAN = strings.Join(specs, " ")
	sw.method = impair.MethodUserspace
	netemOK, how := preflight.KernelFeature("netem")
	switch {
	case plan.Impairment == Netem && !netemOK:
		return nil, fmt.Errorf("--impairment netem: this kernel has no netem (%s)", how)
	case plan.Impairment == Userspace:
	case netemOK:
		sw.method = impair.MethodNetem
	default:
		doc.Env.Fallbacks = append(doc.Env.Fallbacks, "wan: the userspace impairment instead of netem (netem: "+how+")")
	}
	doc.Env.ImpairmentMethod, doc.Env.Impairment = sw.method, sw.describe(w.settings(), w.conds[w.order[0]].QueueLimit())
	seeded := sw.method == impair.MethodUserspace
	doc.Env.LossSeeded = &seeded
	if seeded {
		seed := sw.seed
		doc.Env.WANSeed = &seed
	}
	return sw, nil
}

// describe is the env block's description of a sweep's impairment, its
// settings in words (Run.settings) and its queue limit.
func (sw *Sweep) describe(settings []string, limit int) string {
	shared := "; the server's egress is the one link every client's traffic from the server crosses, each client's egress its own"
	if sw.method == impair.MethodNetem {
		return fmt.Sprintf("netem through netlink on every client's and the server's eth0 egress (the relay has none): %s, limit %d; "+
			"set on each transport and client count's own testbed before the clients' paths come up, removed after their load%s; %s",
			strings.Join(settings, "; "), limit, shared, impair.NetemSeedNote)
	}
	return fmt.Sprintf("userspace impairment: twnsbench's AF_PACKET forwarder in the switch namespace replaces the bridge on each "+
		"transport and client count's own testbed, from before the clients' paths come up to the end of their load; frames every "+
		"client and the server send get %s, independent random loss each; limit %d frames per direction; the relay's are forwarded "+
		"at once%s. Loss seed %d (pass --seed %d to repeat the drop positions). Forwarder threads SCHED_FIFO %d",
		strings.Join(settings, "; "), limit, shared, sw.seed, sw.seed, impair.DefaultRTPriority)
}

// On sets the condition named cond on b, before the clients' paths come
// up: the probes' two ends (the listener in the server, the loss probe's
// sender in the first client), the impairment (netem on b's Egress, or
// the forwarder on its switch), each undone by b's teardown. what names
// the bed, for messages.
func (sw *Sweep) On(ctx context.Context, b Bed, cond, what string) (*SweepCell, error) {
	client := b.Roles[topology.Client]
	w := &Run{conds: map[string]impair.Condition{cond: sw.conds[cond]}, order: []string{cond}, seed: sw.seed,
		client: client, logf: sw.logf}
	for _, name := range slices.Sorted(maps.Keys(b.Roles)) {
		w.roles = append(w.roles, b.Roles[name])
	}
	probe, err := impair.StartProbe(ctx, client, b.Roles[topology.Server], "")
	if err != nil {
		return nil, err
	}
	w.probe = probe
	b.OnTeardown("WAN probes", func(context.Context) error { return probe.Close() })
	if sw.method == impair.MethodNetem {
		w.imp = impair.NewNetem(netemTargets(b))
	} else if w.imp, _, err = switchForwarder(*b.Switch, b.OnTeardown); err != nil {
		return nil, err
	}
	imp := w.imp
	b.OnTeardown("impairment ("+imp.Method()+")", func(ctx context.Context) error { return imp.Clear(ctx) })
	c, err := w.Set(ctx, results.Condition{Name: cond}, []string{what})
	if err != nil {
		return nil, err
	}
	return &SweepCell{c: c, roles: b.Roles}, nil
}

// SweepCell is the condition set on one sweep testbed, from the probes
// before the load to the verification after it (the sweep's
// fanout.Impaired).
type SweepCell struct {
	c       *Cell
	roles   map[string]*role.Role
	clients []*float64 // each client's median RTT (ms), nil where none was measured
}

// Probe measures the RTT from every client but the first, all at once,
// then runs the run's probes from the first (its RTT, the loss end to
// end, the impairment's counters): the loss probe meets no other traffic.
func (s *SweepCell) Probe(ctx context.Context, clients []string) {
	w := s.c.w
	count, gap := w.conds[s.c.cond.Name].Probes()
	s.clients = make([]*float64, len(clients))
	var wg sync.WaitGroup
	for i, name := range clients[1:] {
		wg.Go(func() {
			rtt, err := impair.ProbeRTTEvery(ctx, s.roles[name], w.probe.Addr(), count, gap)
			if err != nil {
				w.logf("%s / %s: %s: %v", s.c.rows, s.c.cond.Name, name, err)
			}
			if rtt.N > 0 {
				m := ms(rtt.Median)
				s.clients[i+1] = &m
			}
		})
	}
	wg.Wait()
	s.c.Probe(ctx)
	if rtt := s.c.probed.rtt; rtt.N > 0 {
		m := ms(rtt.Median)
		s.clients[0] = &m
	}
}

// Verify reads the impairment's counters over the row, judges the
// condition as a run's cell (a rate cap against what the clients received
// together) and clears it.
func (s *SweepCell) Verify(ctx context.Context, row results.ClientsRow) *results.ClientsWAN {
	goodput := func(string) (float64, bool) {
		if row.Error != "" || len(row.Failed) > 0 || len(row.PerClientMbps) != row.N {
			return 0, false
		}
		return stats.SummarizeClients(row.N, row.PerClientMbps).Aggregate / 1000, true
	}
	noHop := func(string, impair.NarrowHop) (impair.NarrowEvidence, string) { return impair.NarrowEvidence{}, "" }
	out := s.c.End(ctx, []string{row.Transport}, goodput, noHop)
	if err := s.c.Clear(ctx); err != nil {
		s.c.w.logf("%v", err)
	}
	return &results.ClientsWAN{ClientRTTMs: s.clients, Verification: out.Verifications[0]}
}
