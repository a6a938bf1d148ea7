package nsbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// ReportFile is the Markdown report's name inside the output directory.
const ReportFile = "bench-report.md"

// teardownTimeout bounds the whole teardown, which runs under a fresh
// context so that a cancelled run still cleans up.
const teardownTimeout = 60 * time.Second

// Logf is a printf-style logger.
type Logf func(format string, args ...any)

// Deps are what Run uses but does not decide.
type Deps struct {
	Transports  []transport.Transport // in run order; unavailable ones are reported as skipped
	Instruments []instrument.Instrument
	Versions    map[string]string // tool → version, from preflight
	Logf        Logf
	// Ready records the time-to-ready sample of every path.
	Ready bool
	// Status, when set, is told which sample is about to run (for a live
	// progress line on a terminal).
	Status func(Status)
	// TransportOptions are the transports' option values that are not
	// host paths, recorded so a rerun uses them too.
	TransportOptions map[string]string
}

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
}

// Run executes plan. It returns the results written so far even when it
// fails or is interrupted.
func Run(ctx context.Context, plan *Plan, deps Deps) (res *Result, err error) {
	logf := deps.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	prefix, err := topology.NewPrefix()
	if err != nil {
		return nil, err
	}
	r := &runner{plan: plan, deps: deps, logf: logf, prefix: prefix, start: time.Now()}
	r.res = &Result{OutDir: plan.OutDir, Prefix: prefix}
	if err := r.openOutput(); err != nil {
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

type runner struct {
	plan   *Plan
	deps   Deps
	logf   Logf
	prefix string
	start  time.Time
	res    *Result
	doc    *results.Document // read here; changed only through rec
	rec    *recorder
	logDir string
	stack  undoStack

	topo    *topology.Topology
	env     *transport.Testbed
	payload *payload
	sampler *metrics.Sampler
	// udpBuffer is the UDP socket buffer the kernel allows the client and
	// the server, up to instrument.MaxUDPBuffer.
	udpBuffer int
	ssh       instrument.SSHClient
	wan       *wanRun                 // nil without a WAN condition
	roleDirs  map[string]*proc.Cgroup // each role's cgroup directory (CPU is read here)
	progress  *progress
	baseline  bool // the fixtures' peak memory is recorded
}

func (r *runner) openOutput() error {
	r.logDir = filepath.Join(r.plan.OutDir, "logs", r.prefix)
	if err := os.MkdirAll(r.logDir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	r.doc = newDocument(r.plan, r.deps.Versions)
	r.rec = newRecorder(r.doc, r.plan.OutDir)
	r.rec.instruments(instrument.Declarations(r.deps.Instruments, r.deps.Ready))
	r.rec.config(r.plan, r.deps)
	r.res.Doc = r.doc
	return r.write()
}

// write saves the results document atomically; called after every sample.
func (r *runner) write() error { return r.rec.save() }

func (r *runner) run(ctx context.Context) error {
	if err := r.setUp(ctx); err != nil {
		return err
	}
	if err := r.probeDrift(ctx, "start"); err != nil {
		return err
	}
	rows, err := r.prepareRows(ctx)
	if err != nil {
		return err
	}
	for i, b := range r.schedule(rows) {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.progress.enter(i)
		if err := r.runBlock(ctx, b); err != nil {
			return err
		}
	}
	if err := r.probeDrift(ctx, "end"); err != nil {
		return err
	}
	if r.plan.Keep {
		// The daemons are the harness's children and die with it, so
		// keeping the topology means staying alive until told to stop.
		if err := r.write(); err != nil {
			return err
		}
		for _, l := range r.keptHelp() {
			r.logf("keep: %s", l)
		}
		r.logf("keep: topology is up; press Ctrl-C to tear it down")
		<-ctx.Done()
	}
	return nil
}

// driftProbeTime is how long each drift probe's iperf3 runs.
const driftProbeTime = 2 * time.Second

// probeDrift measures the host itself (iperf3, one stream, straight to the
// server) and records it as the run's start or end figure. A probe that
// fails is logged and left out: it describes the host, not a transport.
// Only an interruption is returned.
func (r *runner) probeDrift(ctx context.Context, when string) error {
	job := r.instrumentEnv(transport.DirectTarget(r.topo.Spec.Addr(topology.Server).String()))
	job.Duration = driftProbeTime
	in := instrument.IPerf3{Streams: 1}
	if _, err := r.waitExclusive(ctx, in); err != nil {
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
	return r.write()
}

// setUp builds everything the transports share, pushing each undo as soon
// as its creation succeeded.
func (r *runner) setUp(ctx context.Context) error {
	dir := privateDir(r.prefix)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("private directory: %w", err)
	}
	r.stack.push("private directory", func(context.Context) error { return removePrivateDir(dir) })
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("private directory: %w", err)
	}

	spec := topology.DefaultSpec(r.prefix)
	spec.Congestion = r.plan.Congestion
	if spec.Congestion == "host" {
		spec.Congestion = ""
	}
	t0 := time.Now()
	topo, err := topology.Up(spec)
	if err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	r.rec.topology(topo, r.prefix, time.Since(t0))
	r.topo = topo
	r.stack.push("topology", func(context.Context) error { return topo.Down() })
	r.logf("topology up in %.0f ms: %s", r.doc.Timings.TopologyUpSec*1000, r.doc.Env.Topology)

	root, err := proc.Cgroup2Root()
	if err != nil {
		return err
	}
	roleDirs, cgs, err := roleCgroups(root, r.prefix, spec.Roles)
	r.stack.push("cgroups", func(ctx context.Context) error { return removeCgroups(ctx, root, r.prefix) })
	if err != nil {
		return err
	}
	r.roleDirs = roleDirs

	if instrument.NeedsPayload(r.deps.Instruments) {
		r.logf("writing %s of random payload to tmpfs", FormatSize(r.plan.SizeBytes+r.plan.WarmBytes()))
		p, err := mountPayload(dir, r.plan.SizeBytes, r.plan.WarmBytes())
		if p != nil {
			r.stack.push("payload tmpfs", func(context.Context) error { return p.unmount() })
		}
		if err != nil {
			return err
		}
		r.payload = p
	} else {
		// No instrument copies a file: none is written, and no condition
		// claims a payload size.
		r.rec.noPayload()
	}

	r.env = &transport.Testbed{Topo: topo, Cgroups: cgs, Dir: dir, LogDir: r.logDir, Logf: r.logf}
	fx, err := transport.StartFixtures(ctx, r.env)
	if err != nil {
		return err
	}
	r.env.Fixtures = fx
	r.stack.push("server fixtures", func(context.Context) error { return fx.Stop() })

	r.sampler = &metrics.Sampler{
		Roles:         map[string]func() (uint64, error){},
		ClientRxBytes: func() (uint64, error) { return topo.RxBytes(topology.Client) },
	}
	for role, cg := range roleDirs {
		r.sampler.Roles[role] = cg.UsageUsec
	}
	r.sampler.Run = (&proc.Cgroup{Path: cgroupDir(root, r.prefix)}).UsageUsec
	if err := r.setUpImpairment(ctx, root); err != nil {
		return fmt.Errorf("WAN impairment: %w", err)
	}

	if r.udpBuffer, err = socketBufferLimit(topo); err != nil {
		return err
	}
	r.ssh = instrument.SSHClient{User: transport.BenchUser, KeyPath: fx.KeyPath}
	if r.payload != nil {
		probe := r.instrumentEnv(transport.DirectTarget(topo.Spec.Addr(topology.Server).String()))
		dctx, cancel := context.WithTimeout(ctx, detectFormTimeout)
		form, err := instrument.DetectForm(dctx, probe, r.payload.Probe)
		cancel()
		if err != nil {
			return fmt.Errorf("scp against plain SSH: %w", err)
		}
		r.ssh.Form = form
		r.rec.scp(form, instrument.OptionsString())
	}
	return r.write()
}

func (r *runner) instrumentEnv(t transport.Target) *instrument.Job {
	return &instrument.Job{
		Target:   t,
		Duration: r.plan.Duration,
		SSH:      r.ssh,
		Run: func(ctx context.Context, name string, argv ...string) (proc.Result, error) {
			return proc.Run(ctx, r.env.Spec(topology.Client, name, append([]string{name}, argv...)...))
		},
		SocketBuffer: r.udpBuffer,
		UDPRcvbufErrors: func() (uint64, error) {
			st, err := metrics.ReadUDPStats(r.topo.Roles[topology.Client].NS)
			return st.RcvbufErrors, err
		},
		ServerIdle: r.serverIdle,
	}
}

// waitExclusive waits, outside the meters, until every one-test-at-a-time
// service in needs is idle on the server, and returns how long that took.
func (r *runner) waitExclusive(ctx context.Context, in instrument.Instrument) (time.Duration, error) {
	var total time.Duration
	for _, svc := range in.Needs().Exclusive {
		waited, err := r.serverIdle(ctx, transport.FixturePorts()[svc])
		total += waited
		if err != nil {
			return total, fmt.Errorf("%s server not idle: %w", svc, err)
		}
	}
	return total, nil
}

// serverIdleTimeout bounds the wait for a server to close the previous
// test's connections.
const serverIdleTimeout = 30 * time.Second

// serverIdle waits until no connection to port is open in the server's
// namespace (the previous test's close has come through the transport),
// polling its TCP table, and returns how long that took.
func (r *runner) serverIdle(ctx context.Context, port int) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, serverIdleTimeout)
	defer cancel()
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		n, err := metrics.OpenTCPConns(r.topo.Roles[topology.Server].NS, port)
		if err != nil || n == 0 {
			if delay == time.Millisecond {
				return 0, err // idle at once: no wait to report
			}
			return time.Since(start), err
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("server port %d still had %d open connections after %s", port, n, time.Since(start).Round(time.Millisecond))
		case <-time.After(delay):
		}
	}
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
		if err := t.Check(); err != nil {
			r.skip(t, "", err.Error())
			continue
		}
		rw, err := r.newRow(t)
		if err != nil {
			return nil, err
		}
		if p, ok := t.(transport.Preparer); ok {
			t0 := time.Now()
			if err := p.Prepare(ctx, rw.tb); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				r.skip(t, "", "preparation failed: "+err.Error())
				continue
			}
			r.logf("%s: prepared once for every condition in %.1f s", t.Label(), time.Since(t0).Seconds())
		}
		rows = append(rows, rw)
	}
	return rows, r.write()
}

// schedule lays out the run in the plan's order and records it.
func (r *runner) schedule(rows []*row) []block {
	bs, rs := schedule(r.plan.Order, rows, r.doc.Conditions)
	var names [][]string
	if r.plan.Order != OrderReference {
		for _, round := range rs {
			names = append(names, rowNames(round))
		}
		if len(names) > 1 {
			r.logf("interleaved in %d rounds: some paths cannot be up at the same time: %v", len(names), names)
		}
	}
	r.rec.order(r.plan.Order, names)
	r.progress = r.newProgress(bs)
	return bs
}

// runBlock measures a block: the condition is set (the impairment, for a
// WAN), each row's path is built under it, every path's warm-up runs,
// then the timed runs, run by run, each row's instruments in turn; the
// paths close and the condition is cleared. A path that does not come up
// is reported as skipped for this condition.
func (r *runner) runBlock(ctx context.Context, b block) (err error) {
	cond := b.cond
	var applied []impair.Applied
	_, impaired := r.impaired(cond.Name)
	if impaired {
		var clear func(*error)
		if applied, clear, err = r.setImpairment(ctx, b, cond); err != nil {
			return err
		}
		defer clear(&err)
	}
	var live []*row
	defer func() {
		for _, rw := range live {
			r.closePath(rw)
		}
	}()
	for _, rw := range b.rows {
		r.logf("%s / %s: setting up", rw.t.Label(), cond.Name)
		path, err := r.bringUp(ctx, rw, cond, true)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.skip(rw.t, cond.Name, "set-up failed: "+err.Error())
			r.dropPlanned(rw.t, cond)
			r.rowDone(rw)
			if err := r.write(); err != nil {
				return err
			}
			continue
		}
		r.rec.path(rw.t, path)
		rw.path, rw.pathFaults, rw.copyRate = path, 0, 0
		live = append(live, rw)
	}
	if len(live) == 0 {
		return nil
	}
	var wan *wanCell
	if impaired {
		wan = r.beginWANCell(ctx, cond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	jobs := map[*row]*instrument.Job{}
	for _, rw := range live {
		if err := r.warmUp(ctx, rw, cond); err != nil {
			return err
		}
		jobs[rw] = r.instrumentEnv(rw.path.Target)
		jobs[rw].Payload, jobs[rw].PayloadBytes = r.scpPayload(cond), cond.ScpPayloadBytes
	}
	last := r.plan.Runs
	if r.plan.RunsAuto {
		last = r.plan.MaxRuns
	}
	for run := 1; run <= last; run++ {
		more := false
		for _, rw := range live {
			for _, in := range r.deps.Instruments {
				if run > r.plan.Runs {
					// --runs auto, past the pilot: only the cells whose
					// pilot asked for this many runs.
					planned := r.autoRuns(rw.t, cond, in)
					if run > planned || rw.path != nil && instrument.Applicable(in, rw.path.Target) != nil {
						continue
					}
					if run == r.plan.Runs+1 { // the pilot's plan, counted at once
						r.progress.extend(rw.t.Name(), cond.Name, in.Name(), planned-r.plan.Runs)
					}
				}
				if rw.path == nil {
					r.progress.drop(rw.t.Name(), cond.Name, in.Name(), 1) // its path was given up (see afterFault)
					continue
				}
				more = true
				fault, err := r.sample(ctx, rw, in, jobs[rw], cond, run)
				if err != nil {
					return err
				}
				if fault != nil {
					if err := r.afterFault(ctx, fault, jobs, wan); err != nil {
						return err
					}
				}
			}
		}
		if !more {
			break
		}
	}
	if wan != nil {
		r.endWANCell(ctx, wan, live, cond, applied)
	}
	return r.write()
}

// autoRuns is how many runs --runs auto gives a cell: fixed by its pilot
// (the first plan.Runs runs) and never revised, so every later run counts
// whatever it shows (results.Document.PlannedRuns).
func (r *runner) autoRuns(t transport.Transport, cond results.Condition, in instrument.Instrument) int {
	return r.doc.PlannedRuns(t.Name(), cond.Name, in.Name())
}

// closePath samples the peak memory of a row's path while its processes
// still run, closes it, and records the row's peaks after its last block.
func (r *runner) closePath(rw *row) {
	r.dropPath(rw)
	r.rowDone(rw)
}

func (r *runner) dropPath(rw *row) {
	if rw.path == nil {
		return
	}
	rw.peaks.sample(r, rw.t, rw.path)
	if err := rw.path.Close(); err != nil {
		r.logf("%s: close: %v", rw.t.Label(), err)
	}
	rw.path = nil
}

// rebuild closes a row's path and builds it again, so one broken sample
// (recorded as failed) costs no other. A path that does not come back
// leaves the row's remaining samples of the block unmeasured; the error
// says why.
func (r *runner) rebuild(ctx context.Context, rw *row, cond results.Condition, jobs map[*row]*instrument.Job) (time.Duration, error) {
	start := time.Now()
	r.logf("%s / %s: building the path again", rw.t.Label(), cond.Name)
	r.dropPath(rw)
	path, err := r.bringUp(ctx, rw, cond, false)
	if err != nil {
		return time.Since(start), err
	}
	rw.path = path
	job := r.instrumentEnv(path.Target)
	job.Payload, job.PayloadBytes = jobs[rw].Payload, jobs[rw].PayloadBytes
	jobs[rw] = job
	return time.Since(start), nil
}

// rowDone counts one of the row's blocks as done.
func (r *runner) rowDone(rw *row) {
	if rw.blocks--; rw.blocks == 0 {
		r.recordRSS(rw)
	}
}

// detectFormTimeout bounds trying the scp forms on a small file over the
// plain path (each form takes well under a second here).
const detectFormTimeout = 60 * time.Second

// readyTimeout bounds the wait for the first exchange through a path.
const readyTimeout = 60 * time.Second

// bringUp builds t's path and waits for the first SSH exchange through it;
// the time from the start of set-up to that exchange is the ready sample.
func (r *runner) bringUp(ctx context.Context, rw *row, cond results.Condition, recordReady bool) (*transport.Path, error) {
	t := rw.t
	r.sampler.Transport = rw.meters
	before, err := r.sampler.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("meters: %w", err)
	}
	start := time.Now()
	path, err := t.Up(ctx, rw.tb)
	if err != nil {
		return nil, err
	}
	r.stack.push(t.Name()+" path", func(context.Context) error { return path.Close() })
	r.rec.path(t, path) // before the ready sample, which is recorded by what the path is
	if err := r.firstExchange(ctx, path.Target); err != nil {
		path.Close()
		return nil, fmt.Errorf("no SSH exchange through the path: %w", err)
	}
	ready := time.Since(start)
	after, err := r.sampler.Snapshot()
	if err != nil {
		path.Close()
		return nil, fmt.Errorf("meters: %w", err)
	}
	r.logf("%s / %s: ready in %.2f s", t.Name(), cond.Name, ready.Seconds())
	if r.deps.Ready && recordReady {
		d := after.Sub(before)
		r.rec.sample(results.Sample{
			Transport: t.Name(), Condition: cond.Name, Instrument: instrument.Ready, Run: 1,
			WallSec: ready.Seconds(), Value: ready.Seconds(), Unit: "s",
			HostCPUSec: d.HostCPUSec, RoleCPUSec: d.RoleCPUSec, TransportCPUSec: d.TransportCPUSec,
		}, d.HarnessCPUSec)
	}
	return path, r.write()
}

// firstExchange runs `ssh … true` through the path until it succeeds: a
// transport may report itself up a moment before its data path carries.
func (r *runner) firstExchange(ctx context.Context, target transport.Target) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	env := r.instrumentEnv(target)
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		err := instrument.Exchange(ctx, env)
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(delay):
		}
	}
}

// newRow gives t its own cgroup in every role, metered.
func (r *runner) newRow(t transport.Transport) (*row, error) {
	cgs, err := transportCgroups(r.roleDirs, t.Name())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name(), err)
	}
	tb := *r.env
	tb.Cgroups = cgs
	rw := &row{t: t, tb: &tb, cgs: cgs, meters: map[string]func() (uint64, error){}, peaks: rssPeaks{}}
	for role, cg := range cgs {
		rw.meters[role] = cg.UsageUsec
	}
	return rw, nil
}

// dropPlanned takes the samples of a transport under a condition out of
// the progress plan: they will not run.
func (r *runner) dropPlanned(t transport.Transport, cond results.Condition) {
	for _, in := range r.deps.Instruments {
		r.progress.drop(t.Name(), cond.Name, in.Name(), r.plan.Runs)
	}
}

// skip records that t cannot run under condition ("" for every condition).
func (r *runner) skip(t transport.Transport, condition, reason string) {
	where := ""
	if condition != "" {
		where = " / " + condition
	}
	r.logf("%s%s: skipped: %s", t.Label(), where, reason)
	r.rec.skip(t, condition, reason)
}

// warmUp runs every applicable instrument once, untimed, before the
// cell's first timed run.
func (r *runner) warmUp(ctx context.Context, rw *row, cond results.Condition) error {
	if r.plan.Warmup == 0 {
		return nil
	}
	warm := r.instrumentEnv(rw.path.Target)
	warm.Duration = r.plan.Warmup
	if r.payload != nil {
		warm.Payload, warm.PayloadBytes = r.payload.Warm, r.payload.WarmBytes
	}
	r.logf("%s / %s: warm-up", rw.t.Name(), cond.Name)
	for _, in := range r.deps.Instruments {
		if instrument.Applicable(in, rw.path.Target) != nil {
			continue
		}
		if _, impaired := r.impaired(cond.Name); impaired && in.Name() == "scp" {
			continue // the reference warms scp up on the LAN only
		}
		m, err := instrument.MeasureBounded(ctx, in, warm)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.logf("%s / %s: warm-up %s: %v", rw.t.Name(), cond.Name, in.Name(), err)
			continue
		}
		if m.PayloadBytes != nil && m.WallSec > 0 {
			rw.copyRate = float64(*m.PayloadBytes) / m.WallSec
		}
	}
	return nil
}

// sample measures once with meters read just before and just after, and
// saves the document. A tool error is recorded as a failure with the
// tool's own message; only an interruption is returned.
func (r *runner) sample(ctx context.Context, rw *row, in instrument.Instrument, env *instrument.Job, cond results.Condition, run int) (*sampleFault, error) {
	t, path := rw.t, rw.path
	r.sampler.Transport = rw.meters
	if err := instrument.Applicable(in, env.Target); err != nil {
		r.progress.drop(t.Name(), cond.Name, in.Name(), 1)
		if run == 1 {
			r.rec.notApplicable(t, cond.Name, in.Name(), err.Error())
		}
		return nil, nil
	}
	r.progress.begin(t.Name(), cond.Name, in.Name(), run)
	start := time.Now()
	fault := func(err error, deadline bool) (*sampleFault, error) {
		return &sampleFault{row: rw, in: in, cond: cond, run: run, err: err, start: start, deadline: deadline}, nil
	}
	idle, ierr := r.waitExclusive(ctx, in)
	if ierr != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return fault(ierr, false)
	}
	env.ExpectedRate = r.copyRate(rw, cond)
	// The tunnel's count is read outside the CPU meters' window (reading
	// SAs or sock_diag is the harness's work), around it: it still spans
	// everything the tool moved.
	tunnel := tunnelMeter(path)
	tunnelBefore, terr := tunnel()
	before, err := r.sampler.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("meters: %w", err)
	}
	m, merr := instrument.MeasureBounded(ctx, in, env)
	after, err := r.sampler.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("meters: %w", err)
	}
	tunnelAfter, terr2 := tunnel()
	if merr == nil {
		merr = errors.Join(terr, terr2)
	}
	if merr != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var expired *instrument.DeadlineError
		return fault(merr, errors.As(merr, &expired))
	}
	var tunnelBytes *int64
	if path.Carried != nil {
		carried := tunnelAfter - tunnelBefore
		tunnelBytes = &carried
		if m.MovedBytes > 0 && carried < m.MovedBytes {
			return fault(fmt.Errorf("the traffic bypassed the tunnel: %s moved %d bytes, the tunnel carried %d", in.Tool(), m.MovedBytes, carried), false)
		}
	}
	d := after.Sub(before)
	s := results.Sample{
		Transport: t.Name(), Condition: cond.Name, Instrument: in.Name(), Run: run,
		WallSec: m.WallSec, Value: m.Value, Unit: m.Unit,
		MeanUs: m.MeanUs, P50Us: m.P50Us, P99Us: m.P99Us,
		PayloadBytes:    m.PayloadBytes,
		TunnelBytes:     tunnelBytes,
		HostCPUSec:      d.HostCPUSec,
		RoleCPUSec:      d.RoleCPUSec,
		TransportCPUSec: d.TransportCPUSec,
		Extra:           m.Extra,
		Series:          m.Series,
		Noise:           noiseOf(d),
		Method:          m.Method,
	}
	if idle > 0 {
		if s.Extra == nil {
			s.Extra = map[string]float64{}
		}
		s.Extra["server_idle_wait_sec"] += idle.Seconds()
	}
	if len(s.Extra) == 0 {
		s.Extra = nil
	}
	if m.PayloadBytes != nil {
		wire := d.ClientRxBytes
		s.WireBytes = &wire
	}
	if m.MovedBytes > 0 {
		s.MovedBytes = &m.MovedBytes
	}
	r.rec.sample(s, d.HarnessCPUSec)
	r.progress.finish(r.logf, t.Name(), cond.Name, in.Name(), run, fmt.Sprintf("%.4g %s", m.Value, m.Unit))
	return nil, r.write()
}

// noiseOf is a sample's record of the host's other work.
func noiseOf(d metrics.Delta) *results.Noise {
	if d.Noise == nil {
		return nil
	}
	n := d.Noise
	return &results.Noise{BackgroundCPUSec: n.BackgroundCPUSec, BackgroundPct: n.BackgroundPct(),
		StealCPUSec: &n.StealSec, StealPct: n.StealPct(), WindowSec: n.WindowSec}
}

// tunnelMeter reads the path's own count of bytes carried, or 0 for a
// path without one.
func tunnelMeter(path *transport.Path) func() (int64, error) {
	if path.Carried == nil {
		return func() (int64, error) { return 0, nil }
	}
	return path.Carried
}

// finish tears down (unless --keep), records the run's end and writes the
// results and the report one last time.
func (r *runner) finish(runErr error) error {
	var errs []error
	if r.doc == nil {
		return nil
	}
	interrupted := errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded)
	if interrupted {
		r.logf("interrupted: keeping the %d samples measured so far", len(r.doc.Samples))
	}
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
	errs = append(errs, r.stack.unwind(ctx))
	cancel()
	r.rec.end(interrupted, runErr, time.Since(r.start), time.Since(t0))
	werr := r.write()
	errs = append(errs, werr, r.writeReports(werr == nil))
	if r.doc.Interrupted != "" {
		errs = append(errs, ErrInterrupted)
	}
	return errors.Join(errs...)
}

func (r *runner) keptHelp() []string {
	var lines []string
	for _, role := range r.topo.Spec.Roles {
		lines = append(lines, fmt.Sprintf("sudo ip netns exec %s bash   # %s, %s", r.topo.Spec.NetnsName(role), role, r.topo.Spec.Addr(role)))
	}
	return lines
}

// socketBufferLimit is the largest socket buffer both the client and the
// server namespaces allow (net.core.rmem_max and wmem_max), capped at
// instrument.MaxUDPBuffer. Newer kernels keep these per namespace and show
// them inside it; older ones (Debian 12's 6.1) only in the initial
// namespace, where the value then holds for all.
func socketBufferLimit(topo *topology.Topology) (int, error) {
	limit := instrument.MaxUDPBuffer
	for _, role := range []string{topology.Client, topology.Server} {
		for _, key := range []string{"rmem_max", "wmem_max"} {
			path := "/proc/sys/net/core/" + key
			var b []byte
			err := topo.Roles[role].NS.Do(func() (err error) {
				b, err = os.ReadFile(path)
				return err
			})
			if errors.Is(err, os.ErrNotExist) {
				b, err = os.ReadFile(path) // the initial namespace's, global here
			}
			if err != nil {
				return 0, fmt.Errorf("%s: read net.core.%s: %w", role, key, err)
			}
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return 0, fmt.Errorf("%s: net.core.%s %q: %w", role, key, b, err)
			}
			limit = min(limit, n)
		}
	}
	return limit, nil
}
