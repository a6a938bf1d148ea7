package nsbench

import (
	"context"
	"errors"
	"fmt"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/verdict"
	"github.com/twnsbench/twnsbench/nsbench/wan"
)

// pairing measures the two builds of a transport under b's condition
// in rounds. Their paths cannot be up together, so in round k each build
// in runOrder's order (A B in odd rounds, B A in even ones: ABBA) brings
// its path up, warms up, takes its sample of every instrument and closes
// it: a pair is one round's A and B samples of a cell, taken minutes
// apart at most, and what drifts over the block falls on A first as often
// as on B. After the planned rounds (pairedRounds), the verdict decides;
// while it asks for more (verdict.Plan), more rounds follow, up to
// --max-rounds.
type pairing struct {
	c    *cellLoop
	b    block
	cell *wan.Cell // nil on an unimpaired condition
	// probed is set once the WAN condition was probed, with the first
	// path up.
	probed bool
	prof   *blockProfile // nil unless the run profiles (--profile)
}

func (p *pairing) measure(ctx context.Context) (err error) {
	c, b := p.c, p.b
	cond := b.cond
	cell, err := c.wan.Set(ctx, cond, rowNames(b.rows))
	if err != nil {
		return err
	}
	if cell != nil {
		defer func() { err = errors.Join(err, cell.Clear(ctx)) }()
	}
	p.cell = cell
	p.prof = newBlockProfile(c, b)
	defer func() {
		// What the rounds recorded, interrupted or not.
		err = errors.Join(err, p.prof.finish(c.rec, cond.Name))
	}()
	defer func() {
		for _, rw := range b.rows {
			c.closePath(rw, b)
		}
	}()
	gone := map[*row]bool{} // builds given up under this condition
	defer func() {
		for _, rw := range b.rows {
			for _, in := range b.instruments {
				c.progress.settle(rw.t.Name(), cond.Name, in.Name())
			}
		}
	}()
	rounds := pairedRounds(c.plan.Options, b.counted)
	for run := 1; run <= rounds; run++ {
		for _, rw := range runOrder(b.rows, run) {
			if gone[rw] {
				continue
			}
			if err := p.turn(ctx, rw, run); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				c.logf("%s / %s round %d: %v", rw.t.Label(), cond.Name, run, err)
				gone[rw] = true
			}
		}
		if run == rounds && len(gone) == 0 {
			rounds += p.moreRounds(rounds)
		}
	}
	if cell != nil {
		c.endWAN(ctx, cell, b.rows, b) // the paths are closed: no diagnostics of theirs
	}
	return c.rec.save()
}

// turn is one build's turn in round run: path up, warm-up, one sample of
// every instrument, path closed. An error gives the build up under this
// condition (it was recorded as skipped).
func (p *pairing) turn(ctx context.Context, rw *row, run int) error {
	c, b, cell := p.c, p.b, p.cell
	cond := b.cond
	c.logf("%s / %s: round %d: setting up", rw.t.Label(), cond.Name, run)
	path, err := c.bringUp(ctx, rw, b, run) // every round times its path's set-up: ready pairs too
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.skip(rw.t, cond.Name, fmt.Sprintf("set-up failed in round %d: %v", run, err))
		c.dropPlanned(rw.t, b)
		return err
	}
	c.rec.path(rw.t, path)
	rw.path, rw.pathFaults, rw.copyRate = path, 0, 0
	defer c.dropPath(rw)
	if run == 1 {
		dropNotApplicable(c.progress, b.instruments, rw)
		if cell != nil && !p.probed {
			p.probed = true
			cell.Probe(ctx)
		}
	}
	if err := c.warmUp(ctx, rw, b); err != nil {
		return err
	}
	p.prof.begin(ctx, rw)
	defer p.prof.end(ctx, rw, run)
	job := c.tb.job(path)
	job.Payload, job.PayloadBytes = c.scpPayload(cond), cond.ScpPayloadBytes
	jobs := map[*row]*instrument.Job{rw: job}
	for _, in := range b.instruments {
		if rw.path == nil {
			return errors.New("its path was given up")
		}
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
	return c.rec.save()
}

// pairedRounds is how many rounds two builds measure before the
// verdict's first look: --runs, but at least verdict.FirstLook (no cell
// can be called before), at most --max-rounds. A counted block looks
// first at verdict.FirstLook whatever --runs: a count resolves about 1 %
// in 12 pairs, and its rounds are the run's slowest (a daemon under
// valgrind), so the rounds --runs asks of the speed cells would buy it
// nothing. The progress plans them from the start, so the estimate does
// not jump at the first look.
func pairedRounds(o Options, counted bool) int {
	if counted {
		return min(verdict.FirstLook, o.Builds.MaxRounds)
	}
	return min(max(o.Runs, verdict.FirstLook), o.Builds.MaxRounds)
}

// planRounds is the verdict's rule for more rounds (a test's fake may
// stand in for it).
var planRounds = verdict.Plan

// moreRounds asks the verdict, over the block's cells so far, how many
// more rounds to measure (0: stop), within --max-rounds, and adds them to
// the progress plan.
func (p *pairing) moreRounds(done int) int {
	c, b := p.c, p.b
	doc := c.rec.doc
	var cells []verdict.Cell
	// The block's own cells: its instruments', and the ready samples
	// its paths take (not a counted block's, bringUp).
	ins := map[string]bool{instrument.Ready: c.ready && !b.counted}
	for _, in := range b.instruments {
		ins[in.Name()] = true
	}
	for _, cell := range pairCells(doc, buildPairs(rowNames(b.rows))) {
		if cell.Condition == b.cond.Name && ins[cell.Instrument] {
			cells = append(cells, cell)
		}
	}
	o := verdict.Options{MinEffect: c.plan.Builds.MinEffect, Alpha: verdictAlpha}
	// Decided together (the p-values are adjusted across cells), planned
	// on the cells --fail-on selects: a metric nobody acts on (a
	// retransmit count that is mostly 0, never decided) buys no rounds.
	var counted []verdict.Result
	for _, r := range verdict.Decide(cells, o) {
		if failOnOf(c.plan.Builds).selects(r.Condition, r.Instrument, r.Metric) {
			counted = append(counted, r)
		}
	}
	n := min(planRounds(counted, done, c.plan.Builds.MaxRounds, o), c.plan.Builds.MaxRounds-done)
	if n <= 0 {
		return 0
	}
	c.logf("%s: the verdict asks for %d more rounds (after %d)", b.cond.Name, n, done)
	for _, rw := range b.rows {
		for _, in := range b.instruments {
			c.progress.more(rw.t.Name(), b.cond.Name, in.Name(), n)
		}
	}
	return n
}
