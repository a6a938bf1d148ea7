package nsbench

import (
	"time"
)

// cellKey is one transport × condition × instrument.
type cellKey struct{ transport, cond, inst string }

// progressBlock is a block of the schedule as the estimate needs it: its
// condition, the transports whose paths it brings up and the instruments
// it measures (nil: every instrument of the plan).
type progressBlock struct {
	cond        string
	transports  []string
	instruments []string
	// pairedRuns, for the two builds of a transport (0 for other
	// blocks), is the rounds they measure before the verdict's first look
	// (pairedRounds); the verdict may ask for more up to the cap
	// (progress.settle).
	pairedRuns int
}

// progressPlan is what the estimate starts from: the schedule and what
// each condition asks of a copy.
type progressPlan struct {
	runs        int // per cell; under --runs auto, the pilot
	maxRuns     int // under --runs auto, the most per cell; 0 otherwise
	instruments []string
	sized       map[string]bool    // instruments whose time scales with the payload
	payload     map[string]int64   // condition → the bytes a payload-sized instrument copies
	copyRate    map[string]float64 // condition → a first guess of a copy's rate (bytes/s) from its profile (copyRateGuess)
	blocks      []progressBlock
	tail        time.Duration // after the last block: the end's drift probe, costed as the start's took
}

// progress counts the samples that will run and estimates the time left
// from what the run measured so far: each transport × condition ×
// instrument's own sample time once it ran (a 10 s iperf3 through one
// tunnel and a 5 GiB scp through another take very different times), the
// time between samples (meters, saving the results), and each block's
// set-up, warm-up and WAN verification before its samples and its closing
// after them, per transport under its condition. Until a cell ran, its
// time is guessed from its nearest measured relatives (cellTimes.
// sampleTime), and the estimate says it is a first guess; so it does,
// under --runs auto, until the pilots have fixed every cell's runs. Samples
// that will not run (a path that failed to come up, an instrument the
// path cannot carry) are dropped from the plan as soon as that is known,
// so [k/N] ends at N.
type progress struct {
	plans  runPlans
	cells  cellTimes
	blocks blockTimes
	left   map[cellKey]int
	done   int
	start  time.Time
	began  time.Time // the current sample's start
	status func(Status)
	now    func() time.Time
	tail   time.Duration // see progressPlan
}

// runPlans is how many runs each cell gets: --runs; under --runs auto the
// pilot's until the pilot fixes the cell's number (fix).
type runPlans struct {
	pilot   int
	maxRuns int // 0 without --runs auto
	planned map[cellKey]int
	fixed   map[cellKey]bool // under --runs auto: the pilot fixed it, or the cell will not run
	// open are a paired block's cells whose verdict may still ask for
	// more rounds: their plan is the least the run measures, a guess.
	open map[cellKey]bool
}

func newProgress(plan progressPlan, status func(Status)) *progress {
	if status == nil {
		status = func(Status) {}
	}
	p := &progress{
		plans: runPlans{pilot: plan.runs, maxRuns: plan.maxRuns, planned: map[cellKey]int{}, fixed: map[cellKey]bool{}, open: map[cellKey]bool{}},
		cells: cellTimes{payload: plan.payload, sized: plan.sized, copyRate: plan.copyRate,
			spent: map[cellKey]time.Duration{}, count: map[cellKey]int{}},
		blocks: newBlockTimes(plan.blocks),
		left:   map[cellKey]int{}, status: status, now: time.Now, tail: plan.tail}
	for _, b := range plan.blocks {
		runs := plan.runs
		if b.pairedRuns > 0 {
			runs = b.pairedRuns
		}
		ins := b.instruments
		if ins == nil {
			ins = plan.instruments
		}
		for _, t := range b.transports {
			for _, in := range ins {
				k := cellKey{t, b.cond, in}
				p.left[k] += runs
				p.plans.planned[k] += runs
				p.plans.open[k] = p.plans.open[k] || b.pairedRuns > 0
			}
		}
	}
	p.start = p.now()
	p.blocks.mark = p.start
	return p
}

func (p *progress) total() int {
	n := p.done
	for _, l := range p.left {
		n += l
	}
	return n
}

// enter starts block i of the schedule: the time since the last sample
// closed the previous block.
func (p *progress) enter(i int) {
	p.blocks.enter(i, p.now())
}

// fix plans a cell's runs under --runs auto once its pilot is over:
// planned in all, the pilot's among them.
func (p *progress) fix(transport, cond, inst string, planned int) {
	k := cellKey{transport, cond, inst}
	if p.plans.fixed[k] {
		return
	}
	p.left[k] += max(0, planned-p.plans.planned[k])
	p.plans.planned[k], p.plans.fixed[k] = planned, true
}

// more adds n samples to a cell's plan: more rounds a verdict asked for.
func (p *progress) more(transport, cond, inst string, n int) {
	k := cellKey{transport, cond, inst}
	p.left[k] += n
	p.plans.planned[k] += n
}

// settle says a paired block's cell will measure no more rounds than
// planned: its verdict stopped, or the block ended.
func (p *progress) settle(transport, cond, inst string) {
	delete(p.plans.open, cellKey{transport, cond, inst})
}

// drop removes n planned samples of a cell that will not run.
func (p *progress) drop(transport, cond, inst string, n int) {
	k := cellKey{transport, cond, inst}
	p.left[k] = max(0, p.left[k]-n)
}

// cancel takes a cell's remaining samples out of the plan, and any its
// pilot would have added: none of them will run (the path did not come up
// or was given up, or cannot carry the instrument).
func (p *progress) cancel(transport, cond, inst string) {
	k := cellKey{transport, cond, inst}
	p.left[k], p.plans.fixed[k], p.plans.planned[k] = 0, true, 0 // planned 0: no pilot's plan to forecast from
}

// notApplicable takes an instrument the transport's path cannot carry out
// of the plan under every condition: its path is the same under each.
// Should a later path carry it after all, its samples run unplanned.
func (p *progress) notApplicable(transport, inst string) {
	for k := range p.left {
		if k.transport == transport && k.inst == inst {
			p.cancel(k.transport, k.cond, k.inst)
		}
	}
}

// eta estimates the time left: the samples still planned (under --runs
// auto, and those the pilots not yet over will likely add) at their
// cells' estimated times and the time between samples, plus the set-up of
// the blocks not yet under way, the closing of those not yet closed and
// the run's tail.
// guess is true when any part of it was not measured for its own cell or
// condition, or rests on a pilot not yet over or a verdict that may still
// ask for more rounds. 0 when nothing has been measured.
func (p *progress) eta() (eta time.Duration, guess bool) {
	if p.done == 0 {
		return 0, true
	}
	gap := p.blocks.meanGap()
	for k, l := range p.left {
		more, forecast := p.plans.forecast(k)
		if l+more == 0 {
			continue
		}
		d, own := p.cells.sampleTime(k)
		eta += time.Duration(l+more) * (d + gap)
		guess = guess || !own || forecast || p.plans.open[k]
	}
	d, own := p.blocks.ahead(p.now())
	return eta + d + p.tail, guess || !own
}

// forecast is how many runs a cell's pilot, not yet over, will likely add
// beyond it under --runs auto: what the fixed cells of its instrument
// added on average, else those of every instrument, else the least the
// rule adds (stats.SecondStageMin). It says whether it is a forecast.
func (r *runPlans) forecast(k cellKey) (int, bool) {
	if r.maxRuns == 0 || r.fixed[k] {
		return 0, false
	}
	for _, like := range []func(cellKey) bool{
		func(o cellKey) bool { return o.inst == k.inst },
		func(cellKey) bool { return true },
	} {
		var added, n int
		for o, fixed := range r.fixed {
			if fixed && like(o) && r.planned[o] > 0 {
				added, n = added+r.planned[o]-r.pilot, n+1
			}
		}
		if n > 0 {
			return (added + n/2) / n, true
		}
	}
	return min(secondStageMin, max(0, r.maxRuns-r.pilot)), true
}

// runOf is run among k's planned runs.
func (r *runPlans) runOf(k cellKey, run int) RunOf {
	planned := r.planned[k]
	if planned == 0 {
		planned = r.pilot
	}
	return RunOf{Run: run, Runs: planned, Pilot: r.maxRuns > 0 && !r.fixed[k], MaxRuns: r.maxRuns}
}

// begin reports the sample about to run.
func (p *progress) begin(transport, cond, inst string, run int) {
	p.began = p.now()
	p.blocks.begin(p.began)
	eta, guess := p.eta()
	p.status(Status{Transport: transport, Condition: cond, Instrument: inst, Run: p.plans.runOf(cellKey{transport, cond, inst}, run),
		Done: p.done, Total: p.total(), Elapsed: p.began.Sub(p.start), ETA: eta, FirstGuess: guess})
}

// finish logs a finished sample with its outcome.
func (p *progress) finish(logf Logf, transport, cond, inst string, run int, outcome string) {
	now := p.now()
	k := cellKey{transport, cond, inst}
	p.cells.spent[k] += now.Sub(p.began)
	p.cells.count[k]++
	p.left[k] = max(0, p.left[k]-1)
	p.done++
	p.blocks.mark = now
	left := "?"
	d, guess := p.eta()
	if d > 0 || p.done == p.total() {
		left = d.Round(time.Second).String()
	}
	if guess && d > 0 {
		left += " left, a first guess"
	} else {
		left += " left"
	}
	logf("[%d/%d] %s / %s %s run %s: %s (elapsed %s, about %s)",
		p.done, p.total(), transport, cond, inst, p.plans.runOf(k, run), outcome,
		now.Sub(p.start).Round(time.Second), left)
}
