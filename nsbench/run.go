package nsbench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// ErrInterrupted is returned when the run's context was cancelled; the
// results measured so far are kept.
var ErrInterrupted = errors.New("run interrupted")

// Result is what a run produced.
type Result struct {
	Doc      *results.Document
	OutDir   string
	Prefix   string
	Failures int // samples that could not be measured
	// Unverified counts WAN cells whose measured RTT or loss was off the
	// configured condition (see Doc.Verification).
	Unverified int
	// Clients is the many-client sweep's document (Plan.Clients), in
	// place of Doc; Failures then counts its rows, repeats included,
	// that could not be measured whole or left something behind.
	Clients *results.Clients
}

// Run executes plan. It returns the results written so far even when it
// fails or is interrupted.
//
// The pipeline: the testbed comes up (testbed.go), the WAN impairment is
// chosen and proven on it (nsbench/wan, handed the testbed in wan.go),
// every transport is checked and gets its row (prepareRows), the schedule
// lays the rows out in blocks (schedule.go), and the cell loop measures
// block after block (cell.go, sample.go, fault.go; a WAN block's condition
// is a wan.Cell). The recorder (recorder.go) is the only writer of the
// results document. The many-client sweep (plan.Clients) runs instead in
// sweep.go.
func Run(ctx context.Context, plan *Plan, deps Deps) (res *Result, err error) {
	logf := deps.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if plan.Sweep() {
		return runSweep(ctx, plan, deps, logf)
	}
	sites := deps.Sites
	if plan.Hosts.On() && sites == nil {
		if sites, err = OpenSites(ctx, plan.Hosts); err != nil {
			return nil, fmt.Errorf("hosts: %w", err)
		}
		if err := sites.CopyBuilds(ctx, deps.Transports); err != nil {
			return nil, errors.Join(fmt.Errorf("hosts: %w", err), sites.Close())
		}
	}
	cfg := testbedConfig{OutDir: plan.OutDir, Network: plan.Network, Duration: plan.Duration, Sites: sites,
		WAN: len(plan.WANs) > 0, Programs: transport.ProgramsByRole(deps.Transports)}
	for _, svc := range transport.OwnServices() {
		if instrument.NeedsService(deps.Instruments, svc) {
			cfg.Own = append(cfg.Own, svc)
		}
	}
	if instrument.NeedsPayload(deps.Instruments) {
		cfg.Payload, cfg.Warm = plan.SizeBytes, plan.WarmBytes()
	}
	tb, err := newTestbed(cfg, logf)
	if err != nil {
		return nil, errors.Join(err, sites.Close())
	}
	r := &runner{plan: plan, deps: deps, logf: logf, start: time.Now(), tb: tb}
	r.res = &Result{OutDir: plan.OutDir, Prefix: tb.prefix}
	r.openOutput()
	if err := r.rec.save(); err != nil {
		return r.res, err
	}
	defer func() {
		p := recover()
		err = errors.Join(err, r.finish(err))
		if p != nil {
			panic(p) // after teardown: a panic never leaves the topology behind
		}
	}()
	return r.res, r.run(ctx)
}

// runner is one run: its plan, the testbed it stands on, the recorder of
// its results and the cell loop that measures.
type runner struct {
	plan  *Plan
	deps  Deps
	logf  Logf
	start time.Time
	res   *Result
	rec   *recorder // the only writer of res.Doc
	tb    *testbed
	cells *cellLoop // nil until the testbed is up
}

func (r *runner) openOutput() {
	doc := newDocument(r.plan, r.deps.Versions)
	r.rec = newRecorder(doc, r.plan.OutDir)
	r.rec.setup.instruments(instrument.Declarations(r.deps.Instruments, r.deps.Ready))
	r.rec.setup.config(r.plan, r.deps)
	r.res.Doc = doc
}

func (r *runner) run(ctx context.Context) error {
	if err := r.tb.up(ctx, r.rec); err != nil {
		return err
	}
	wan, err := setUpWAN(ctx, r.plan, r.tb, r.rec)
	if err != nil {
		return fmt.Errorf("WAN impairment: %w", err)
	}
	if err := r.rec.save(); err != nil {
		return err
	}
	r.cells = &cellLoop{plan: r.plan, ready: r.deps.Ready,
		tb: r.tb, rec: r.rec, wan: wan, logf: r.logf,
		memory: &memoryMeter{rec: r.rec, logf: r.logf, fixtures: r.tb.view.Fixtures.Procs}}
	probeStart := time.Now()
	if err := r.probeDrift(ctx, "start"); err != nil {
		return err
	}
	probeTime := time.Since(probeStart)
	rows, err := r.prepareRows(ctx)
	if err != nil {
		return err
	}
	for i, b := range r.schedule(rows, probeTime) {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.cells.progress.enter(i)
		if err := r.cells.block(ctx, b); err != nil {
			return err
		}
	}
	if err := r.probeDrift(ctx, "end"); err != nil {
		return err
	}
	if r.plan.Keep {
		// The daemons are the harness's children and die with it, so
		// keeping the topology means staying alive until told to stop.
		if err := r.rec.save(); err != nil {
			return err
		}
		for _, l := range r.tb.keptHelp() {
			r.logf("keep: %s", l)
		}
		r.logf("keep: topology is up; press Ctrl-C to tear it down")
		<-ctx.Done()
	}
	return nil
}

// driftProbeTime is how long each drift probe's iperf3 runs, at most: a
// run of shorter samples gets probes as long as its samples, the same kind
// of figure.
const driftProbeTime = 2 * time.Second

// probeDrift measures the host itself (iperf3, one stream, straight to the
// server) and records it as the run's start or end figure, unless the run
// was asked not to (Schedule.DriftProbe). A probe that fails is logged and
// left out: it describes the host, not a transport. Only an interruption
// is returned.
func (r *runner) probeDrift(ctx context.Context, when string) error {
	if !r.plan.DriftProbe {
		return nil
	}
	job := r.tb.job(r.tb.direct())
	job.Duration = min(driftProbeTime, max(job.Duration, time.Second))
	in := instrument.IPerf3{Streams: 1}
	if _, err := r.tb.waitQuiet(ctx, in); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.logf("drift probe (%s): %v", when, err)
		return nil
	}
	at := time.Now()
	m, err := instrument.MeasureBounded(ctx, in, job)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.logf("drift probe (%s): %v", when, err)
		return nil
	}
	r.logf("drift probe (%s): plain iperf3 %.2f Gbit/s", when, m.Value)
	r.rec.driftProbe(results.DriftProbe{When: when, At: at.UTC().Format(time.RFC3339), Gbps: m.Value, WallSec: m.WallSec})
	return r.rec.save()
}

// prepareRows checks every transport, gives each its own cgroups and
// prepares those that provision once per run. A transport that cannot run
// is reported as skipped and gets no row; only an interruption stops the
// run.
func (r *runner) prepareRows(ctx context.Context) ([]*row, error) {
	var rows []*row
	for _, t := range r.deps.Transports {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.rec.transport(t)
		view, err := r.tb.forTransport(ctx, t.Name())
		if err != nil {
			return nil, err
		}
		if missing := missingRoles(t, view); missing != "" {
			r.cells.skip(t, "", "needs the "+missing+" role, which this run has not: name its host (--host "+missing+"=USER@HOST,addr=…)")
			continue
		}
		if why := whyUnavailable(ctx, t, view, r.tb.cfg.Sites, r.deps.Recipe); why != "" {
			r.cells.skip(t, "", why)
			continue
		}
		rw := newRow(t, view)
		if p, ok := t.(transport.Preparer); ok {
			t0 := time.Now()
			if err := p.Prepare(ctx, rw.view); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				r.cells.skip(t, "", "preparation failed: "+err.Error())
				continue
			}
			r.logf("%s: prepared once for every condition in %.1f s", t.Label(), time.Since(t0).Seconds())
		}
		rows = append(rows, rw)
	}
	return rows, r.rec.save()
}

// schedule lays out the run in the plan's order and records it; the end's
// drift probe will take about probeTime.
func (r *runner) schedule(rows []*row, probeTime time.Duration) []block {
	bs, rs := schedule(r.plan.Order, rows, r.rec.doc.Conditions, r.deps.Instruments, r.deps.Ready)
	var names [][]string
	if r.plan.Order != OrderReference {
		for _, round := range rs {
			names = append(names, rowNames(round))
		}
		if len(names) > 1 {
			r.logf("interleaved in %d rounds: some paths cannot be up at the same time: %v", len(names), names)
		}
	}
	r.rec.setup.order(r.plan.Order, names)
	r.cells.progress = r.newProgress(bs, probeTime)
	return bs
}

// finish tears down (unless --keep), records the run's end and writes the
// results and the report one last time.
func (r *runner) finish(runErr error) error {
	var errs []error
	doc := r.rec.doc
	interrupted := errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded)
	if interrupted {
		r.logf("interrupted: keeping the %d samples measured so far", len(doc.Samples))
	}
	t0 := time.Now()
	errs = append(errs, r.tb.down())
	if r.cells != nil {
		r.res.Failures, r.res.Unverified = r.cells.tally.failures, r.cells.tally.unverified
	}
	if r.plan.HasBuilds() {
		r.rec.verdicts(decideBuilds(doc, r.plan.Builds))
	}
	r.rec.end(interrupted, runErr, time.Since(r.start), time.Since(t0))
	werr := r.rec.save()
	errs = append(errs, werr, r.writeReports(werr == nil))
	if doc.Interrupted != "" {
		errs = append(errs, ErrInterrupted)
	}
	return errors.Join(errs...)
}

// newProgress plans the progress of the schedule bs: every row's
// instruments under each block's condition, the payload each condition's
// copies move and a first guess of their rate, and which instruments copy
// it, and the time after the last block (the end's drift probe).
func (r *runner) newProgress(bs []block, tail time.Duration) *progress {
	plan := progressPlan{runs: r.plan.Runs, sized: map[string]bool{}, payload: map[string]int64{}, copyRate: map[string]float64{}, tail: tail}
	if r.plan.RunsAuto {
		plan.maxRuns = r.plan.MaxRuns
	}
	for _, in := range r.deps.Instruments {
		plan.instruments = append(plan.instruments, in.Name())
		plan.sized[in.Name()] = instrument.NeedsPayload([]instrument.Instrument{in})
	}
	for _, c := range r.rec.doc.Conditions {
		plan.payload[c.Name] = c.ScpPayloadBytes
		plan.copyRate[c.Name] = copyRateGuess(c.Profile)
	}
	plan.blocks = progressBlocks(bs, r.plan.Options)
	return newProgress(plan, r.deps.Status)
}

// progressBlocks are the schedule's blocks as the progress plans them:
// each with its own instruments.
func progressBlocks(bs []block, o Options) []progressBlock {
	var out []progressBlock
	for _, b := range bs {
		pb := progressBlock{cond: b.cond.Name, transports: rowNames(b.rows), instruments: []string{}}
		if b.paired {
			pb.pairedRuns = pairedRounds(o, b.counted)
		}
		for _, in := range b.instruments {
			pb.instruments = append(pb.instruments, in.Name())
		}
		out = append(out, pb)
	}
	return out
}

// writeReports renders the reports from the results document as saved,
// read back from its file: what JSON does not keep (invalid UTF-8 in a
// tool's message becomes U+FFFD, for one) then cannot make the run's report
// differ from `twnsbench report` on the same file. When the last save
// failed, the document in memory is all there is.
func (r *runner) writeReports(saved bool) error {
	d := r.rec.doc
	if saved {
		back, err := results.Read(filepath.Join(r.plan.OutDir, results.FileName))
		if err != nil {
			return err
		}
		d = back
	}
	_, err := WriteReports(r.plan.OutDir, d)
	return err
}

// whyUnavailable is why t cannot run, "" when it can: its Check on this
// host; across hosts (sites) its Check on the host of every role it uses
// (the client, the server and those it needs), rebuilt there from recipe
// (a build's programs at their copies there), so that the programs,
// modules and paths checked are those of the machines that will run it.
func whyUnavailable(ctx context.Context, t transport.Transport, view *transport.Testbed, sites *Sites, recipe transport.Recipe) string {
	if !sites.On() {
		if err := t.Check(); err != nil {
			return err.Error()
		}
		return ""
	}
	var why []string
	for _, name := range transport.RolesOf(t) {
		rl := view.Roles[name]
		if rl == nil {
			continue
		}
		reason, err := transport.CheckIn(ctx, rl, t.Name(), sites.recipeFor(name, recipe))
		if err != nil {
			reason = "its check failed there: " + err.Error()
		}
		if reason != "" {
			why = append(why, "on the "+name+"'s host: "+reason)
		}
	}
	return strings.Join(why, "; ")
}

// missingRoles names a role t's path needs that the testbed lacks (a run
// across hosts builds only the roles named), or "".
func missingRoles(t transport.Transport, view *transport.Testbed) string {
	n, ok := t.(transport.RoleNeeder)
	if !ok {
		return ""
	}
	for _, r := range n.NeedsRoles() {
		if view.Roles[r] == nil {
			return r
		}
	}
	return ""
}
