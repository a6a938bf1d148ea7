package nsbench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
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
// again without the probe. A row whose path is to blame maxPathFaults times in one block has
// its remaining samples there skipped, so one broken transport cannot
// spend the other rows' time.

// maxPathFaults is how many path faults a row may have in one block.
const maxPathFaults = 3

// sampleFault is a sample that could not be measured.
type sampleFault struct {
	row      *row
	in       instrument.Instrument
	cond     results.Condition
	run      int
	err      error
	start    time.Time
	deadline bool // it outlasted its budget and was killed
}

// afterFault checks the parts a failed sample went through, builds again
// what does not answer, and records the failure with what it found and
// did. Only an interruption is returned.
func (r *runner) afterFault(ctx context.Context, f *sampleFault, jobs map[*row]*instrument.Job, wan *wanCell) error {
	rw, cond := f.row, f.cond
	r.logf("%s / %s / %s run %d: FAILED: %v; checking its path and the server's services", rw.t.Label(), cond.Name, f.in.Name(), f.run, f.err)
	var checks, repairs []string
	shared := false // a part every row shares was broken: not the path's fault

	if wan != nil {
		problem, repaired := r.checkImpairment(ctx, cond, wan)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case problem == "":
			checks = append(checks, "WAN impairment: answered")
		case repaired:
			checks = append(checks, "WAN impairment: "+problem)
			repairs = append(repairs, "the WAN impairment (set again; its counters restart)")
		default:
			checks = append(checks, "WAN impairment: "+problem)
		}
		shared = shared || problem != ""
	}

	direct := r.instrumentEnv(transport.DirectTarget(r.topo.Spec.Addr(topology.Server).String()))
	seen := map[string]bool{}
	for _, svc := range f.in.Needs().Services {
		name := r.env.Fixtures.Serving(svc)
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		err := instrument.Answers(ctx, direct, svc)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			checks = append(checks, name+": answered")
			continue
		}
		shared = true
		checks = append(checks, fmt.Sprintf("%s: no answer (%v)", name, err))
		if rerr := r.env.Fixtures.Restart(ctx, r.env, svc); rerr != nil {
			r.logf("%s: %v", name, rerr)
			checks = append(checks, fmt.Sprintf("%s: could not be restarted (%v)", name, rerr))
			continue
		}
		repairs = append(repairs, name+" (restarted)")
		r.rec.fallback(fmt.Sprintf("%s did not answer after %s / %s / %s run %d and was restarted", name, rw.t.Name(), cond.Name, f.in.Name(), f.run))
	}

	// A sample that hung while every shared part answers is the path's:
	// it is built again without asking it (a probe would only add its
	// timeout to what the fault costs).
	rebuild := f.deadline && !shared
	if rebuild {
		checks = append(checks, "path: the sample hung on it while the parts it shares answered")
	} else if err := instrument.Answers(ctx, r.instrumentEnv(rw.path.Target), transport.ServiceSSH); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rebuild = true
		checks = append(checks, fmt.Sprintf("path: no SSH exchange through it (%v)", err))
	} else {
		checks = append(checks, "path: answered an SSH exchange")
	}
	if rebuild {
		rw.pathFaults++
	}
	switch {
	case rebuild && rw.pathFaults >= maxPathFaults:
		r.giveUp(rw, cond, fmt.Sprintf("its path failed %d times under this condition; the remaining samples here are skipped", rw.pathFaults))
	case rebuild:
		took, err := r.rebuild(ctx, rw, cond, jobs)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			checks = append(checks, fmt.Sprintf("path: could not be built again (%v)", err))
			r.giveUp(rw, cond, "its path could not be built again after a failed sample: "+err.Error())
			break
		}
		repairs = append(repairs, fmt.Sprintf("the path (in %.1f s)", took.Seconds()))
		r.rec.fallback(fmt.Sprintf("%s / %s: the path failed under %s run %d and was built again (the sample is a failure)", rw.t.Name(), cond.Name, f.in.Name(), f.run))
	}

	msg := f.err.Error()
	if broken := brokenParts(checks); broken != "" {
		msg += "; after it: " + broken
	}
	lost := time.Since(f.start).Seconds()
	r.res.Failures++
	r.rec.failure(results.Failure{
		Transport: rw.t.Name(), Condition: cond.Name, Instrument: f.in.Name(), Run: f.run,
		Error:  msg + " (log: " + filepath.Join(r.logDir, "client-"+f.in.Tool()+".log") + ")",
		Checks: checks, Repairs: repairs, LostSec: &lost,
	})
	r.progress.finish(r.logf, rw.t.Name(), cond.Name, f.in.Name(), f.run, "FAILED: "+msg)
	if len(repairs) > 0 {
		r.logf("%s / %s: built again: %s (%.1f s lost)", rw.t.Label(), cond.Name, strings.Join(repairs, ", "), lost)
	}
	return r.write()
}

// brokenParts says which checked parts did not answer, or "".
func brokenParts(checks []string) string {
	var out []string
	for _, c := range checks {
		if !strings.HasSuffix(c, ": answered") && !strings.HasSuffix(c, ": answered an SSH exchange") {
			out = append(out, c)
		}
	}
	return strings.Join(out, "; ")
}

// giveUp closes a row's path for the rest of the block and says why its
// remaining samples there are not measured.
func (r *runner) giveUp(rw *row, cond results.Condition, reason string) {
	r.dropPath(rw)
	r.skip(rw.t, cond.Name, reason)
}

// impairmentCheckTimeout bounds the question to the WAN impairment.
const impairmentCheckTimeout = 5 * time.Second

// checkImpairment asks the WAN impairment for its counters (the userspace
// forwarder answers on its control socket, a frozen or dead one does not)
// and sets the condition again when it cannot answer; it returns what was
// wrong ("" when nothing) and whether it was set again. The cell's
// counters then start again from the new forwarder's.
func (r *runner) checkImpairment(ctx context.Context, cond results.Condition, c *wanCell) (problem string, repaired bool) {
	w := r.wan
	cctx, cancel := context.WithTimeout(ctx, impairmentCheckTimeout)
	_, err := w.imp.Counters(cctx)
	cancel()
	if err == nil {
		return "", false
	}
	problem = fmt.Sprintf("no answer (%v)", err)
	if _, serr := w.imp.Set(ctx, w.conds[cond.Name]); serr != nil {
		return fmt.Sprintf("%s; setting it again failed: %v", problem, serr), false
	}
	c.before, c.beforeErr = w.imp.Counters(ctx)
	r.rec.fallback(fmt.Sprintf("%s: the WAN impairment stopped answering mid-cell and was set again; its counters (the loss verification) cover the cell from then on", cond.Name))
	return problem, true
}

// copyRate is the slowest copy rate (bytes/s) the row's cell has shown
// under cond, or its warm-up copy's, or 0.
func (r *runner) copyRate(rw *row, cond results.Condition) float64 {
	rate := 0.0
	for _, s := range r.doc.Samples {
		if s.Transport == rw.t.Name() && s.Condition == cond.Name && s.PayloadBytes != nil && s.WallSec > 0 {
			if v := float64(*s.PayloadBytes) / s.WallSec; rate == 0 || v < rate {
				rate = v
			}
		}
	}
	if rate == 0 {
		return rw.copyRate
	}
	return rate
}
