package nsbench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/twnsbench/twnsbench/nsbench/wan"
)

// cellLoop measures the run's blocks, one at a time: under a block's
// condition each row's path comes up, every path's warm-up runs, then the
// timed runs, run by run, each row's instruments in turn; the paths close
// and the condition is cleared. A sample that fails costs that sample
// (afterFault). What it measures goes to the recorder; its own counts are
// in tally.
type cellLoop struct {
	plan     *Plan
	ready    bool // record each path's time-to-ready sample
	tb       *testbed
	rec      *recorder
	progress *progress
	wan      *wan.Run // nil without a WAN condition
	memory   *memoryMeter
	logf     Logf
	tally    tally
}

// tally is what the cells counted for the run's Result.
type tally struct {
	failures   int // samples that could not be measured
	unverified int // WAN cells off their configured condition
}

// block measures b. A path that does not come up is reported as skipped
// for this condition.
func (c *cellLoop) block(ctx context.Context, b block) (err error) {
	if b.paired {
		return (&pairing{c: c, b: b}).measure(ctx)
	}
	cond := b.cond
	cell, err := c.wan.Set(ctx, cond, rowNames(b.rows))
	if err != nil {
		return err
	}
	if cell != nil {
		defer func() { err = errors.Join(err, cell.Clear(ctx)) }()
	}
	var live []*row
	defer func() {
		for _, rw := range live {
			c.closePath(rw, b)
		}
	}()
	for _, rw := range b.rows {
		c.logf("%s / %s: setting up", rw.t.Label(), cond.Name)
		var path *transport.Path
		err := c.wan.NarrowSpan(ctx, cond.Name, rw.t.Name(), func() (err error) {
			path, err = c.bringUp(ctx, rw, b, 1)
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.skip(rw.t, cond.Name, "set-up failed: "+err.Error())
			if cell != nil {
				if v, ok := cell.SetUpStalled(rw.t.Name(), err); ok {
					c.rec.verification(v)
				}
			}
			c.dropPlanned(rw.t, b)
			if !b.counted {
				c.memory.rowDone(rw)
			}
			if err := c.rec.save(); err != nil {
				return err
			}
			continue
		}
		c.rec.path(rw.t, path)
		rw.path, rw.pathFaults, rw.copyRate = path, 0, 0
		dropNotApplicable(c.progress, b.instruments, rw)
		live = append(live, rw)
	}
	if len(live) == 0 {
		return nil
	}
	if cell != nil {
		cell.Probe(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	jobs := map[*row]*instrument.Job{}
	for _, rw := range live {
		if err := c.wan.NarrowSpan(ctx, cond.Name, rw.t.Name(), func() error { return c.warmUp(ctx, rw, b) }); err != nil {
			return err
		}
		jobs[rw] = c.tb.job(rw.path)
		jobs[rw].Payload, jobs[rw].PayloadBytes = c.scpPayload(cond), cond.ScpPayloadBytes
	}
	if err := c.runs(ctx, live, b, jobs, cell); err != nil {
		return err
	}
	if cell != nil {
		c.endWAN(ctx, cell, live, b)
	}
	return c.rec.save()
}

// runs measures the block's timed runs: run 1 of every row and of the
// block's instruments, then run 2, …; with --runs auto, past the pilot,
// only the cells whose pilot asked for more.
func (c *cellLoop) runs(ctx context.Context, live []*row, b block, jobs map[*row]*instrument.Job, cell *wan.Cell) error {
	cond := b.cond
	last := c.plan.Runs
	if c.plan.RunsAuto {
		last = c.plan.MaxRuns
	}
	for run := 1; run <= last; run++ {
		more := false
		for _, rw := range runOrder(live, run) {
			for _, in := range b.instruments {
				if run > c.plan.Runs {
					// --runs auto, past the pilot: only the cells whose
					// pilot asked for this many runs. It is fixed by the
					// pilot and never revised, so every later run counts
					// whatever it shows (results.Document.PlannedRuns).
					planned := c.rec.doc.PlannedRuns(rw.t.Name(), cond.Name, in.Name())
					if run == c.plan.Runs+1 { // the pilot's plan, counted at once
						c.progress.fix(rw.t.Name(), cond.Name, in.Name(), planned)
					}
					if run > planned || rw.path != nil && instrument.Applicable(in, rw.path) != nil {
						continue
					}
				}
				if rw.path == nil {
					c.progress.drop(rw.t.Name(), cond.Name, in.Name(), 1) // its path was given up (see afterFault)
					continue
				}
				more = true
				fault, err := c.sample(ctx, rw, in, jobs[rw], b, run)
				if err != nil {
					return err
				}
				if fault != nil {
					if err := c.afterFault(ctx, fault, jobs, cell); err != nil {
						return err
					}
				}
			}
		}
		if !more {
			return nil
		}
	}
	return nil
}

// endWAN records what the WAN cell of block b measured, with each path's
// own diagnostics beside the impairment's. A counted block verifies its
// condition again, for its own cells: its rows say so.
func (c *cellLoop) endWAN(ctx context.Context, cell *wan.Cell, live []*row, b block) {
	cond := cell.Cond()
	out := cell.End(ctx, rowNames(live), func(t string) (float64, bool) {
		return wan.CellMedian(c.rec.doc, t, cond.Name, instrument.IPerf3{Streams: 1}.Name())
	}, func(t string, hop impair.NarrowHop) (impair.NarrowEvidence, string) {
		return c.wan.Evidence(c.rec.doc, t, cond.Name, hop)
	})
	for _, d := range out.Diagnostics {
		c.rec.diagnostic(d)
	}
	for _, rw := range live {
		if rw.path != nil && rw.path.Diagnose != nil {
			for _, d := range rw.path.Diagnose() {
				c.rec.diagnostic(results.Diagnostic{Transport: rw.t.Name(), Condition: cond.Name, Name: d.Name, Output: d.Output})
			}
		}
	}
	for _, v := range out.Verifications {
		if b.counted {
			v.Note = strings.TrimPrefix(v.Note+"; the counted instruments' cell (its paths' daemon under valgrind), verified apart", "; ")
		}
		c.rec.verification(v)
		if !v.OK {
			c.tally.unverified++
		}
	}
}

// closePath samples the peak memory of a row's path of block b while its
// processes still run, closes it, and records the row's peaks after its
// last block that counts for its memory (not a counted one: block).
func (c *cellLoop) closePath(rw *row, b block) {
	c.dropPath(rw)
	if !b.counted {
		c.memory.rowDone(rw)
	}
}

func (c *cellLoop) dropPath(rw *row) {
	if rw.path == nil {
		return
	}
	if rw.path.Target.Instructions == nil { // else its daemon's peak is valgrind's
		c.memory.samplePath(rw)
	}
	if err := rw.path.Close(); err != nil {
		c.logf("%s: close: %v", rw.t.Label(), err)
	}
	rw.path = nil
}

// readyTimeout bounds the wait for the first exchange through a path.
const readyTimeout = 60 * time.Second

// bringUp builds t's path for block b and waits for the first SSH
// exchange through it; the time from the start of set-up to that exchange
// is the ready sample, recorded as run readyRun (0: not recorded). A block
// brings each path up once (run 1); a paired block once per round, each a
// sample. A counted block's path, its daemon under valgrind, takes none.
func (c *cellLoop) bringUp(ctx context.Context, rw *row, b block, readyRun int) (*transport.Path, error) {
	t, cond := rw.t, b.cond
	if b.counted {
		readyRun = 0
	}
	c.tb.sampler.Transport = rw.meters
	before, err := c.tb.sampler.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("meters: %w", err)
	}
	start := time.Now()
	path, err := c.upAndExchange(ctx, rw, b)
	if err != nil {
		return nil, err
	}
	ready := time.Since(start)
	after, err := c.tb.sampler.Snapshot()
	if err != nil {
		path.Close()
		return nil, fmt.Errorf("meters: %w", err)
	}
	c.logf("%s / %s: ready in %.2f s", t.Name(), cond.Name, ready.Seconds())
	if c.ready && readyRun > 0 {
		d := after.Sub(before)
		c.rec.sample(results.Sample{
			Transport: t.Name(), Condition: cond.Name, Instrument: instrument.Ready, Run: readyRun,
			WallSec: ready.Seconds(), Value: ready.Seconds(), Unit: "s",
			HostCPUSec: d.HostCPUSec, RoleCPUSec: d.RoleCPUSec, TransportCPUSec: d.TransportCPUSec,
		}, d.HarnessCPUSec)
	}
	return path, c.rec.save()
}

// upAndExchange brings rw's path for b up and waits for its first
// exchange; under a narrow hop both are judged by their progress
// (wan.Run.WatchSetUp), so that a path the hop black-holes costs seconds, not
// readyTimeout.
func (c *cellLoop) upAndExchange(ctx context.Context, rw *row, b block) (path *transport.Path, err error) {
	err = c.wan.WatchSetUp(ctx, b.cond.Name, func(ctx context.Context) error {
		p, err := rw.t.Up(ctx, rw.viewFor(b.counted))
		if err != nil {
			return err
		}
		c.tb.onTeardown(rw.t.Name()+" path", func(context.Context) error { return p.Close() })
		c.rec.path(rw.t, p) // before the ready sample, which is recorded by what the path is
		if err := firstExchange(ctx, c.tb.job(p)); err != nil {
			p.Close()
			return fmt.Errorf("no SSH exchange through the path: %w", err)
		}
		path = p
		return nil
	})
	return path, err
}

// firstExchange runs job's `ssh … true` through its path until it
// succeeds: a transport may report itself up a moment before its data path
// carries.
func firstExchange(ctx context.Context, job *instrument.Job) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		err := instrument.Exchange(ctx, job)
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

// dropPlanned takes the samples of a transport in block b out of the
// progress plan: they will not run.
func (c *cellLoop) dropPlanned(t transport.Transport, b block) {
	for _, in := range b.instruments {
		c.progress.cancel(t.Name(), b.cond.Name, in.Name())
	}
}

// dropNotApplicable takes the instruments a row's path cannot carry out
// of the progress plan as soon as the path is up, under every condition
// (its samples are recorded as not applicable when their turn comes).
func dropNotApplicable(p *progress, ins []instrument.Instrument, rw *row) {
	for _, in := range ins {
		if instrument.Applicable(in, rw.path) != nil {
			p.notApplicable(rw.t.Name(), in.Name())
		}
	}
}

// skip records that t cannot run under condition ("" for every condition).
func (c *cellLoop) skip(t transport.Transport, condition, reason string) {
	where := ""
	if condition != "" {
		where = " / " + condition
	}
	c.logf("%s%s: skipped: %s", t.Label(), where, reason)
	c.rec.skip(t, condition, reason)
}

// warmUp runs every applicable instrument of block b once, untimed,
// before the cell's first timed run.
func (c *cellLoop) warmUp(ctx context.Context, rw *row, b block) error {
	cond := b.cond
	if c.plan.Warmup == 0 {
		return nil
	}
	warm := c.tb.job(rw.path)
	warm.Duration = c.plan.Warmup
	if p := c.tb.payload; p != nil {
		warm.Payload, warm.PayloadBytes = p.Warm, p.WarmBytes
	}
	c.logf("%s / %s: warm-up", rw.t.Name(), cond.Name)
	_, impaired := c.wan.Impaired(cond.Name)
	for _, in := range b.instruments {
		if instrument.Applicable(in, rw.path) != nil {
			continue
		}
		if impaired && instrument.NeedsPayload([]instrument.Instrument{in}) {
			continue // the reference warms its copy (scp) up on the LAN only
		}
		if in.Needs().Fault {
			continue
		}
		m, err := instrument.MeasureBounded(ctx, in, warm)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.logf("%s / %s: warm-up %s: %v", rw.t.Name(), cond.Name, in.Name(), err)
			continue
		}
		if m.PayloadBytes != nil && m.WallSec > 0 {
			rw.copyRate = float64(*m.PayloadBytes) / m.WallSec
		}
	}
	return nil
}

// scpPayload is the file scp copies under cond: the full payload on the
// LAN, the warm-up file elsewhere (as the reference does on its WAN).
func (c *cellLoop) scpPayload(cond results.Condition) string {
	p := c.tb.payload
	if p == nil {
		return ""
	}
	if _, ok := c.wan.Impaired(cond.Name); ok {
		return p.Warm
	}
	return p.Large
}

// noiseOf is a sample's record of the host's other work.
func noiseOf(d metrics.Delta) *results.Noise {
	if d.Noise == nil {
		return nil
	}
	n := d.Noise
	out := &results.Noise{BackgroundCPUSec: n.BackgroundCPUSec, BackgroundPct: n.BackgroundPct(),
		StealCPUSec: &n.StealSec, StealPct: n.StealPct(), WindowSec: n.WindowSec}
	for m, mn := range d.MachineNoise {
		if out.Machines == nil {
			out.Machines = map[string]results.MachineNoise{}
		}
		out.Machines[m] = results.MachineNoise{BackgroundPct: mn.BackgroundPct(), StealPct: mn.StealPct()}
	}
	return out
}

// tunnelMeter reads the path's own count of bytes carried, or 0 for a
// path without one.
func tunnelMeter(path *transport.Path) func() (int64, error) {
	if path.Carried == nil {
		return func() (int64, error) { return 0, nil }
	}
	return path.Carried
}
