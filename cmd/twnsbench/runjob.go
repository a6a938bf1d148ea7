package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/fanout"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/urfave/cli/v2"
)

// A run as the command line plans and carries it out: runAction's
// steps, each before anything exists but the last two.

// runJob is a run as the command line plans it: the plan (the options
// NewPlan checked), what it runs (the rows with their builds' programs,
// the instruments) and the rows named one by one, which must run.
type runJob struct {
	plan  *nsbench.Plan
	deps  nsbench.Deps
	named []transport.Transport
}

// planRun reads every flag once and checks what it asks for, before
// anything exists.
func planRun(c *cli.Context) (*runJob, error) {
	opts, err := optionsFrom(c)
	if err != nil {
		return nil, err
	}
	if err := checkHistoryFlag(c); err != nil {
		return nil, err
	}
	plan, err := nsbench.NewPlan(opts, append(transport.Names(), transport.SetNames()...))
	if err != nil {
		return nil, err
	}
	defs, err := buildDefs(c)
	if err != nil {
		return nil, err
	}
	if err := transport.CheckBuilds(plan.Transports, defs); err != nil {
		return nil, err
	}
	if err := checkImpairment(plan); err != nil {
		return nil, err
	}
	if plan.Congestion != "host" {
		if err := topology.CheckCongestion(plan.Congestion); err != nil {
			return nil, err
		}
	}
	recipe := transport.Recipe{Values: transportValues(c), Builds: defs}
	ts, err := transport.BuildWith(plan.Transports, recipe.Values, recipe.Builds)
	if err != nil {
		return nil, err
	}
	named, err := namedTransports(plan, recipe, ts)
	if err != nil {
		return nil, err
	}
	job := &runJob{plan: plan, named: named,
		deps: nsbench.Deps{Transports: ts, Recipe: recipe, TransportOptions: recordedOptions(c)}}
	if !plan.Sweep() {
		if job.deps.Instruments, job.deps.Ready, err = instrumentsFrom(c); err != nil {
			return nil, err
		}
	}
	return job, nil
}

// preflight checks this host's tools and kernel for the run, and prints
// what it found when something is missing.
func (j *runJob) preflight(w io.Writer) error {
	pre := preflight.Run(preflightOptions(j.plan, j.deps.Transports, j.deps.Instruments))
	if err := pre.Err(); err != nil {
		fmt.Fprint(w, pre.String())
		return err
	}
	j.deps.Versions = pre.Versions
	return nil
}

// openSites, across hosts, reaches and checks every host (key, login,
// root, interface, address), starts its copy and agent, copies the
// builds' programs to the hosts of the roles that run them, and checks
// the rows named one by one there with those copies, before any role
// exists anywhere. Nil on one host.
func (j *runJob) openSites(c *cli.Context) (*nsbench.Sites, error) {
	if !j.plan.Hosts.On() {
		return nil, nil
	}
	sites, err := nsbench.OpenSites(c.Context, j.plan.Hosts)
	if err != nil {
		return nil, err
	}
	if err := sites.CopyBuilds(c.Context, j.deps.Transports); err != nil {
		sites.Close()
		return nil, err
	}
	if err := sites.CheckNamed(c.Context, j.named, j.deps.Recipe); err != nil {
		sites.Close()
		return nil, err
	}
	return sites, nil
}

// measure runs the plan on sites (nil: this host), its progress on the
// console, and prints the summary of what it measured.
func (j *runJob) measure(c *cli.Context, sites *nsbench.Sites) (*nsbench.Result, error) {
	con := newConsole(c.App.ErrWriter)
	j.deps.Logf, j.deps.Sites = con.Logf, sites
	if !j.plan.Sweep() {
		j.deps.Status = con.Status
	}
	res, err := nsbench.Run(c.Context, j.plan, j.deps)
	con.Close()
	if res != nil && res.Doc != nil {
		summarize(c, res)
	}
	if res != nil && res.Clients != nil {
		summarizeClients(c, res)
	}
	return res, err
}

// outcome is the run's exit (docs/running.md, "Exit codes"): an
// interruption, a lost host, a failure, else what the run found: the WAN
// verification, the builds' verdict, failed samples. A complete run
// is recorded in the history first.
func (j *runJob) outcome(c *cli.Context, res *nsbench.Result, err error) error {
	if errors.Is(err, nsbench.ErrInterrupted) {
		return errInterrupted
	}
	var lost *role.LostError
	if errors.As(err, &lost) {
		// Every step after the loss fails the same way: the details go
		// above, the one line says what happened.
		fmt.Fprintf(c.App.ErrWriter, "twnsbench: details: %v\n", err)
		return fmt.Errorf("lost %s mid-run (%s): its copy there removes its role by itself; what was measured before is kept in %s", lost.Host, lost.Why, j.plan.OutDir)
	}
	if err != nil {
		return err
	}
	if j.plan.Sweep() {
		verr := verificationOutcome(c, j.plan, res)
		if err := clientsOutcome(res); err != nil {
			return err
		}
		return verr
	}
	// A complete run only: an interrupted or failed one's cells would
	// stand in the trend as runs of their own.
	if err := recordHistory(c, res); err != nil {
		return err
	}
	verr := verificationOutcome(c, j.plan, res)
	var berr error
	if len(res.Doc.Samples) > 0 {
		berr = buildsOutcome(c, res)
	}
	return runOutcome(res, berr, verr)
}

// namedTransports checks that the transports the user named one by one
// can run here, and returns them: across hosts each is checked on its
// hosts instead (OpenSites, CheckNamed). The default set and a named set
// (seed-002, whose kernel IPsec rows need ESP) skip what this host lacks
// and say why. A sweep's transports must all run, each in its many-client
// form (fanout.Check).
func namedTransports(plan *nsbench.Plan, recipe transport.Recipe, ts []transport.Transport) ([]transport.Transport, error) {
	if plan.Sweep() {
		if err := fanout.Check(ts); err != nil {
			return nil, err
		}
		if plan.Hosts.On() && !plan.Hosts.AnyLocal() {
			return ts, nil // checked on their hosts (CheckNamed)
		}
		return ts, checkNamed(ts)
	}
	words := individuallyNamed(plan.Transports)
	if len(words) == 0 {
		return nil, nil
	}
	named, err := transport.BuildWith(words, recipe.Values, recipe.Builds)
	if err != nil {
		return nil, err
	}
	if !plan.Hosts.On() || plan.Hosts.AnyLocal() {
		return named, checkNamed(named)
	}
	return named, nil
}
