package nsbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/fanout"
	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/twnsbench/twnsbench/nsbench/verdict"
	"github.com/twnsbench/twnsbench/nsbench/wan"
)

// runSweep is Run for the many-client sweep (plan.Clients): fanout sweeps
// the transports over the counts, each transport and count on a testbed of
// its own built as every testbed is (bed), and writes the sweep's document
// after every row; the reports follow at the end.
func runSweep(ctx context.Context, plan *Plan, deps Deps, logf Logf) (res *Result, err error) {
	doc := &results.Clients{SchemaVersion: results.SchemaVersion, Env: sweepEnv(), Counts: plan.Clients, DurationSec: plan.Duration.Seconds()}
	doc.Env.Runs = plan.Runs
	for _, t := range deps.Transports {
		if b := buildOf(t); b != nil {
			if doc.Builds == nil {
				doc.Builds = map[string]results.Build{}
			}
			doc.Builds[t.Name()] = *b
		}
	}
	res = &Result{OutDir: plan.OutDir, Clients: doc}
	sw, err := wan.NewSweep(plan.wanPlan(), doc, logf)
	if err != nil {
		return res, err
	}
	sites := deps.Sites
	if plan.Hosts.On() && sites == nil {
		if sites, err = OpenSites(ctx, plan.Hosts); err != nil {
			return res, fmt.Errorf("hosts: %w", err)
		}
		if err := sites.CopyBuilds(ctx, deps.Transports); err != nil {
			return res, errors.Join(fmt.Errorf("hosts: %w", err), sites.Close())
		}
		// As runAction does: every row of a sweep is named, and must run.
		if err := sites.CheckNamed(ctx, deps.Transports, deps.Recipe); err != nil {
			return res, errors.Join(fmt.Errorf("hosts: %w", err), sites.Close())
		}
	}
	// Every testbed's own agents end with it; the sites' connections,
	// copies and agents serve the whole sweep.
	defer func() { err = errors.Join(err, sites.Close()) }()
	cfg := testbedConfig{OutDir: plan.OutDir, Network: plan.Network, Sites: sites, Programs: transport.ProgramsByRole(deps.Transports)}
	up := func(ctx context.Context, s fanout.Shape) (fanout.Bed, error) {
		c := cfg
		c.Clients = s
		b, err := upClients(ctx, c, logf)
		if err == nil {
			roleLinks(doc, b.b.hosted)
		}
		if err != nil || s.Condition == "" {
			return b, err
		}
		// The condition is set before the clients' paths come up.
		egress := append(fanout.ClientRoles(s.Clients), topology.Server)
		cell, err := sw.On(ctx, b.b.wanBed(egress), s.Condition, fmt.Sprintf("%d clients", s.Clients))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", s.Condition, err), b.Down())
		}
		b.imp = cell
		return b, nil
	}
	if sites.On() {
		sweepHosts(ctx, doc, sites, plan.Hosts.Fan, cfg.Programs, logf)
	}
	// Builds side by side meet the host's drift alike (fanout.runOrder).
	fp := fanout.Plan{Counts: plan.Clients, Duration: plan.Duration, OutDir: plan.OutDir, Runs: plan.Runs, Alternate: plan.HasBuilds(),
		Conditions: sweepConditions(plan), Checked: sites.On()}
	err = fanout.Run(ctx, fp, deps.Transports, doc, up, logf)
	doc.Complete = err == nil
	if plan.HasBuilds() {
		doc.MinEffect = verdict.DefaultMinEffect
		doc.Verdicts = decideSweepBuilds(doc, buildPairs(plan.Transports))
	}
	if errors.Is(err, context.Canceled) {
		doc.Incomplete, err = "interrupted", ErrInterrupted
	} else if err != nil {
		doc.Incomplete = err.Error()
	}
	if werr := results.WriteClients(filepath.Join(plan.OutDir, results.ClientsFileName), doc); werr != nil {
		return res, errors.Join(err, werr)
	}
	if _, werr := WriteClientsReports(plan.OutDir, doc); werr != nil {
		return res, errors.Join(err, werr)
	}
	for _, row := range doc.Rows {
		for _, r := range row.Sweeps() {
			if r.Error != "" || len(r.Failed) > 0 || (r.Timing != nil && len(r.Timing.Residue) > 0) {
				res.Failures++
			}
			if r.WAN != nil && !r.WAN.Verification.OK {
				res.Unverified++
			}
		}
	}
	return res, err
}

var _ fanout.Impaired = (*wan.SweepCell)(nil)

// sweepWANOnly, set only by tests, leaves the LAN out of a sweep under a
// WAN condition: its rows are the LAN sweep's own tests'.
var sweepWANOnly bool

// sweepConditions are the conditions a sweep measures under: the LAN
// (""), then every WAN condition, as a run's.
func sweepConditions(plan *Plan) []string {
	conds := []string{""}
	if sweepWANOnly && len(plan.WANs) > 0 {
		conds = nil
	}
	for _, w := range plan.WANs {
		conds = append(conds, w.Name)
	}
	return conds
}

// decideSweepBuilds gives each build pair, at each client count, a verdict
// on the aggregate throughput, as a run's build cells get theirs
// (verdict.Decide: the signed-rank test, confirmed, Benjamini–Hochberg
// across the counts): one pair per run of the sweep, A's and B's
// aggregates of that run, measured side by side (fanout.runOrder). A run
// in which a row measured nothing gives no pair; one in which a client
// was not measured, a lower bound.
func decideSweepBuilds(doc *results.Clients, pairs []buildPair) []results.ClientsVerdict {
	var cells []verdict.Cell
	var at []results.ClientsVerdict // each cell's pair and count, in cells' order
	conds := []string{""}
	for _, c := range doc.Conditions {
		conds = append(conds, c.Name)
	}
	for _, p := range pairs {
		for _, cond := range conds {
			for _, n := range doc.Counts {
				c := verdict.Cell{Transport: p.transport, Condition: cmp.Or(cond, results.LAN), Instrument: "clients", Metric: "aggregate",
					Unit: "Mbit/s", Better: results.BetterHigher}
				as, bs := sweepsAt(doc, p.a, n, cond), sweepsAt(doc, p.b, n, cond)
				for r := range min(len(as), len(bs)) {
					a, aok := aggregateOf(as[r])
					b, bok := aggregateOf(bs[r])
					if aok && bok {
						c.Pairs = append(c.Pairs, verdict.Pair{Round: r + 1, A: a.Aggregate, B: b.Aggregate,
							ACensored: a.Missing > 0, BCensored: b.Missing > 0})
					}
				}
				cells = append(cells, c)
				at = append(at, results.ClientsVerdict{N: n, Verdict: results.Verdict{VerdictCell: results.VerdictCell{A: p.a, B: p.b}}})
			}
		}
	}
	if len(cells) == 0 {
		return nil
	}
	for i, r := range verdict.Decide(cells, verdict.Options{MinEffect: verdict.DefaultMinEffect, Alpha: verdictAlpha}) {
		v := r.Record()
		v.A, v.B = at[i].A, at[i].B
		at[i].Verdict = v
	}
	return at
}

// sweepsAt is row's measurements at n clients under the condition named
// cond ("": the LAN), one per run of the sweep.
func sweepsAt(doc *results.Clients, row string, n int, cond string) []results.ClientsRow {
	for _, r := range doc.Rows {
		if r.Transport == row && r.N == n && r.Condition == cond {
			return r.Sweeps()
		}
	}
	return nil
}

// aggregateOf is r's clients' rates reduced, false when it measured none.
func aggregateOf(r results.ClientsRow) (stats.Shares, bool) {
	if r.Error != "" || len(r.PerClientMbps) == 0 {
		return stats.Shares{}, false
	}
	return stats.SummarizeClients(r.N, r.PerClientMbps), true
}

// sweepEnv is the host as the sweep's document states it.
func sweepEnv() results.Env {
	model, err := preflight.CPUModel()
	if err != nil {
		model = "unknown"
	}
	return results.Env{Generated: time.Now().UTC().Format(time.RFC3339), CPUModel: model, Cores: runtime.NumCPU(),
		Kernel: preflight.KernelRelease(), Topology: fanout.Spec(topology.Prefix+"000000", 1, false).Subnet.String()}
}

// sweepHosts states in doc where the sweep's roles run, before any
// testbed (outside every row's set-up time): the network with every
// role's address, the client's host holding every client (fan), and each
// machine's facts, read by its site's agent.
func sweepHosts(ctx context.Context, doc *results.Clients, sites *Sites, fan []hosts.Host, programs map[string][]preflight.Tool, logf Logf) {
	var where []hostedRole
	var ms []machine
	for _, st := range sites.sites {
		held := []hosts.Host{st.host}
		if st.host.Role == topology.Client && len(fan) > 0 {
			held = fan
		}
		m := machine{on: st.agent.Wire, login: st.host.Dest(), iface: st.ifc.Name}
		for _, h := range held {
			where = append(where, hostedRole{host: h})
			m.roles = append(m.roles, h.Role)
		}
		ms = append(ms, m)
	}
	doc.Env.Topology = describeHosts(where, false)
	for _, h := range readMachines(ctx, ms, programs, logf) {
		doc.Env.AddHost(h)
	}
}

// roleLinks states, once, the settings each machine's role links were
// built with, from the first testbed's roles on it (built): the same on
// every testbed.
func roleLinks(doc *results.Clients, built []hostedRole) {
	for _, b := range built {
		i := slices.IndexFunc(doc.Env.Hosts, func(h results.Host) bool { return h.Login == b.host.Dest() && h.Iface == b.iface })
		if i < 0 {
			continue
		}
		if rl := doc.Env.Hosts[i].RoleLinks; rl == nil || rl.Offloads == "" && rl.Congestion == "" && rl.SysctlChanges == nil {
			l := b.built.LinkFacts
			doc.Env.Hosts[i].RoleLinks = &results.RoleLinks{Offloads: l.Offloads, Congestion: l.Congestion, SysctlChanges: l.SysctlChanges}
		}
	}
}
