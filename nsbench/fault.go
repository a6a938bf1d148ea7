package nsbench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/twnsbench/twnsbench/nsbench/wan"
)

// A fault costs one sample, never the run. Every sample is bounded by its
// instrument's Budget (planned time + instrument.Allowance); when it
// fails, the parts it went through are checked from the bottom up and what
// does not answer is built again:
//
//	the WAN impairment (its forwarder answers)  → set again
//	each server service the instrument talks to → restarted
//	the path (an SSH exchange through it)       → built again
//
// A sample that hung while every shared part answered has its path built
// again without the probe. A row whose path is to blame maxPathFaults
// times in one block has its remaining samples there skipped, so one
// broken transport cannot spend the other rows' time.

// maxPathFaults is how many path faults a row may have in one block.
const maxPathFaults = 3

// sampleFault is a sample that could not be measured.
type sampleFault struct {
	row      *row
	in       instrument.Instrument
	b        block // the block it was measured in
	run      int
	err      error
	start    time.Time
	deadline bool // it outlasted its budget and was killed
	// narrow is the narrow hop's counts over the sample; nil without a
	// narrow hop or a reading.
	narrow *impair.NarrowCounts
}

// afterFault checks the parts a failed sample went through, builds again
// what does not answer, and records the failure with what it found and
// did. Only an interruption is returned.
func (c *cellLoop) afterFault(ctx context.Context, f *sampleFault, jobs map[*row]*instrument.Job, cell *wan.Cell) error {
	rw, cond := f.row, f.b.cond
	c.logf("%s / %s / %s run %d: FAILED: %v; checking its path and the server's services", rw.t.Label(), cond.Name, f.in.Name(), f.run, f.err)
	var checks, broken, repairs []string
	// check records what a part showed; a part that did not answer is also
	// named in the failure's message.
	check := func(finding string, ok bool) {
		checks = append(checks, finding)
		if !ok {
			broken = append(broken, finding)
		}
	}
	shared := false // a part every row shares was broken: not the path's fault

	if cell != nil {
		problem, repaired := cell.Check(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if repaired {
			c.rec.fallback(fmt.Sprintf("%s: the WAN impairment stopped answering mid-cell and was set again; its counters (the loss verification) cover the cell from then on", cond.Name))
		}
		if problem == "" {
			check("WAN impairment: answered", true)
		} else {
			check("WAN impairment: "+problem, false)
			shared = true
		}
		if repaired {
			repairs = append(repairs, "the WAN impairment (set again; its counters restart)")
		}
	}

	direct := c.tb.job(c.tb.direct())
	seen := map[string]bool{}
	for _, svc := range f.in.Needs().Services {
		name := c.tb.view.Fixtures.Serving(svc)
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		err := instrument.Answers(ctx, direct, svc)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			check(name+": answered", true)
			continue
		}
		shared = true
		check(fmt.Sprintf("%s: no answer (%v)", name, err), false)
		if rerr := c.tb.view.Fixtures.Restart(ctx, c.tb.view, svc); rerr != nil {
			c.logf("%s: %v", name, rerr)
			check(fmt.Sprintf("%s: could not be restarted (%v)", name, rerr), false)
			continue
		}
		repairs = append(repairs, name+" (restarted)")
		c.rec.fallback(fmt.Sprintf("%s did not answer after %s / %s / %s run %d and was restarted", name, rw.t.Name(), cond.Name, f.in.Name(), f.run))
	}

	// A sample that hung while every shared part answers is the path's:
	// it is built again without asking it (a probe would only add its
	// timeout to what the fault costs).
	rebuild := f.deadline && !shared
	if rebuild {
		check("path: the sample hung on it while the parts it shares answered", false)
	} else if err := instrument.Answers(ctx, c.tb.job(rw.path), transport.ServiceSSH); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rebuild = true
		check(fmt.Sprintf("path: no SSH exchange through it (%v)", err), false)
	} else {
		check("path: answered an SSH exchange", true)
	}
	if rebuild {
		rw.pathFaults++
	}
	switch {
	case rebuild && rw.pathFaults >= maxPathFaults:
		c.giveUp(rw, f.b, fmt.Sprintf("its path failed %d times under this condition; the remaining samples here are skipped", rw.pathFaults))
	case rebuild:
		took, err := c.rebuild(ctx, rw, f.b, jobs)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			check(fmt.Sprintf("path: could not be built again (%v)", err), false)
			c.giveUp(rw, f.b, "its path could not be built again after a failed sample: "+err.Error())
			break
		}
		repairs = append(repairs, fmt.Sprintf("the path (in %.1f s)", took.Seconds()))
		c.rec.fallback(fmt.Sprintf("%s / %s: the path failed under %s run %d and was built again (the sample is a failure)", rw.t.Name(), cond.Name, f.in.Name(), f.run))
	}

	msg := f.err.Error()
	if len(broken) > 0 {
		msg += "; after it: " + strings.Join(broken, "; ")
	}
	lost := time.Since(f.start).Seconds()
	c.tally.failures++
	c.rec.failure(results.Failure{
		Transport: rw.t.Name(), Condition: cond.Name, Instrument: f.in.Name(), Run: f.run,
		Error:  msg + " (log: " + filepath.Join(c.tb.logDir(), "client-"+f.in.Tool()+".log") + ")",
		Checks: checks, Repairs: repairs, LostSec: &lost, Narrow: failureCounts(f.narrow),
	})
	c.progress.finish(c.logf, rw.t.Name(), cond.Name, f.in.Name(), f.run, "FAILED: "+msg)
	if len(repairs) > 0 {
		c.logf("%s / %s: built again: %s (%.1f s lost)", rw.t.Label(), cond.Name, strings.Join(repairs, ", "), lost)
	}
	return c.rec.save()
}

// giveUp closes a row's path for the rest of the block and says why its
// remaining samples there are not measured.
func (c *cellLoop) giveUp(rw *row, b block, reason string) {
	c.dropPath(rw)
	c.dropPlanned(rw.t, b)
	c.skip(rw.t, b.cond.Name, reason)
}

// rebuild closes a row's path and builds it again, so one broken sample
// (recorded as failed) costs no other. A path that does not come back
// leaves the row's remaining samples of the block unmeasured; the error
// says why.
func (c *cellLoop) rebuild(ctx context.Context, rw *row, b block, jobs map[*row]*instrument.Job) (time.Duration, error) {
	start := time.Now()
	c.logf("%s / %s: building the path again", rw.t.Label(), b.cond.Name)
	c.dropPath(rw)
	path, err := c.bringUp(ctx, rw, b, 0)
	if err != nil {
		return time.Since(start), err
	}
	rw.path = path
	job := c.tb.job(path)
	job.Payload, job.PayloadBytes = jobs[rw].Payload, jobs[rw].PayloadBytes
	jobs[rw] = job
	return time.Since(start), nil
}

// failureCounts is a failed sample's narrow hop counts as the document
// keeps them; nil for none.
func failureCounts(c *impair.NarrowCounts) *results.NarrowCounts {
	if c == nil {
		return nil
	}
	r := wan.ResultCounts(*c)
	return &r
}
