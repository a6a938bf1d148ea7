package nsbench

import (
	"time"
)

// cellKey is one transport × condition × instrument.
type cellKey struct{ transport, cond, inst string }

// progressBlock is a block of the schedule as the estimate needs it: its
// condition and the transports whose paths it brings up.
type progressBlock struct {
	cond       string
	transports []string
}

// progress counts the samples that will run and estimates the time left
// from what the run measured so far: each transport × condition ×
// instrument's own sample time once it ran (a 10 s iperf3 through one
// tunnel and a 5 GiB scp through another take very different times), and
// each block's set-up, warm-up and WAN verification — the time between
// samples — per transport under its condition. Until a cell ran, its
// time is guessed from its nearest measured relative (the same transport
// and instrument under another condition, an instrument that copies the
// payload scaled by the condition's payload size; then other transports)
// and the estimate says it is a first guess. Samples that will not run (a
// path that failed to come up, an instrument the path cannot carry) are
// dropped from the plan as soon as that is known, so [k/N] ends at N.
type progress struct {
	runs   int
	cells  cellTimes
	blocks blockTimes
	left   map[cellKey]int
	done   int
	start  time.Time
	began  time.Time // the current sample's start
	status func(Status)
	now    func() time.Time
}

// cellTimes is the time each cell's samples took so far.
type cellTimes struct {
	payload map[string]int64 // condition → the bytes a payload-sized instrument copies
	sized   map[string]bool  // instruments whose time scales with the payload
	spent   map[cellKey]time.Duration
	count   map[cellKey]int
}

// blockTimes is the time each block of the schedule spent outside its
// samples (set-up, warm-up, WAN verification, closing).
type blockTimes struct {
	blocks   []progressBlock
	cur      int             // the block under way; -1 before the first
	started  []bool          // per block: a sample has begun in it
	overhead []time.Duration // per block: its time outside samples
	mark     time.Time       // the end of the last sample, or the block's start
}

func newProgress(runs int, instruments []string, sized map[string]bool, payload map[string]int64, blocks []progressBlock, status func(Status)) *progress {
	if status == nil {
		status = func(Status) {}
	}
	p := &progress{runs: runs,
		cells:  cellTimes{payload: payload, sized: sized, spent: map[cellKey]time.Duration{}, count: map[cellKey]int{}},
		blocks: blockTimes{blocks: blocks, cur: -1, started: make([]bool, len(blocks)), overhead: make([]time.Duration, len(blocks))},
		left:   map[cellKey]int{}, status: status, now: time.Now}
	for _, b := range blocks {
		for _, t := range b.transports {
			for _, in := range instruments {
				p.left[cellKey{t, b.cond, in}] += runs
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
	now := p.now()
	if p.blocks.cur >= 0 {
		p.blocks.overhead[p.blocks.cur] += now.Sub(p.blocks.mark)
	}
	p.blocks.cur, p.blocks.mark = i, now
}

// extend plans n more samples of a cell (--runs auto past its pilot).
func (p *progress) extend(transport, cond, inst string, n int) {
	p.left[cellKey{transport, cond, inst}] += n
}

// drop removes n planned samples of a cell that will not run.
func (p *progress) drop(transport, cond, inst string, n int) {
	k := cellKey{transport, cond, inst}
	p.left[k] = max(0, p.left[k]-n)
}

// eta estimates the time left: the samples still planned at their cells'
// estimated times, plus the set-up of the blocks not yet under way.
// guess is true when any part of it was not measured for its own cell or
// condition. 0 when nothing has been measured.
func (p *progress) eta() (eta time.Duration, guess bool) {
	if p.done == 0 {
		return 0, true
	}
	for k, l := range p.left {
		if l == 0 {
			continue
		}
		d, own := p.cells.sampleTime(k)
		eta += time.Duration(l) * d
		guess = guess || !own
	}
	for i := max(p.blocks.cur, 0); i < len(p.blocks.blocks); i++ {
		if i == p.blocks.cur && p.blocks.started[i] {
			continue // its set-up is behind it
		}
		rate, own := p.blocks.setUpPerTransport(p.blocks.blocks[i].cond)
		d := time.Duration(len(p.blocks.blocks[i].transports)) * rate
		if i == p.blocks.cur {
			d = max(0, d-p.now().Sub(p.blocks.mark))
		}
		eta += d
		guess = guess || !own
	}
	return eta, guess
}

// sampleTime estimates one sample of k, and says whether it is k's own
// measured mean.
func (p *cellTimes) sampleTime(k cellKey) (time.Duration, bool) {
	if c := p.count[k]; c > 0 {
		return p.spent[k] / time.Duration(c), true
	}
	for _, near := range []func(cellKey) bool{
		func(o cellKey) bool { return o.transport == k.transport && o.inst == k.inst },
		func(o cellKey) bool { return o.cond == k.cond && o.inst == k.inst },
		func(o cellKey) bool { return o.inst == k.inst },
		func(cellKey) bool { return true },
	} {
		if d, ok := p.meanLike(k, near); ok {
			return d, false
		}
	}
	// No copy measured yet: a copy costs what an average sample did.
	var all time.Duration
	var n int
	for o, c := range p.count {
		all, n = all+p.spent[o], n+c
	}
	if n == 0 {
		return 0, false
	}
	return all / time.Duration(n), false
}

// meanLike is the mean sample time of the measured cells near k, sized by
// k's payload when k's instrument and theirs copy one.
func (p *cellTimes) meanLike(k cellKey, near func(cellKey) bool) (time.Duration, bool) {
	var secs, bytes float64
	var n int
	sized := p.sized[k.inst] && p.payload[k.cond] > 0
	for o, c := range p.count {
		if c == 0 || !near(o) {
			continue
		}
		if sized && p.sized[o.inst] && p.payload[o.cond] > 0 {
			secs += p.spent[o].Seconds()
			bytes += float64(c) * float64(p.payload[o.cond])
			continue
		}
		if sized {
			continue // a fixed-duration tool says nothing of a copy's time
		}
		secs += p.spent[o].Seconds()
		n += c
	}
	switch {
	case sized && bytes > 0:
		return time.Duration(secs / bytes * float64(p.payload[k.cond]) * float64(time.Second)), true
	case !sized && n > 0:
		return time.Duration(secs / float64(n) * float64(time.Second)), true
	}
	return 0, false
}

// setUpPerTransport is the measured time outside samples per transport of
// the blocks under cond (path set-up, warm-up, WAN verification, closing),
// or, before any ran, of every measured block (a guess).
func (p *blockTimes) setUpPerTransport(cond string) (time.Duration, bool) {
	mean := func(match func(progressBlock) bool) (time.Duration, bool) {
		var sum time.Duration
		var rows int
		for i := 0; i <= p.cur && i < len(p.blocks); i++ {
			if !p.started[i] || !match(p.blocks[i]) {
				continue
			}
			sum += p.overhead[i]
			rows += len(p.blocks[i].transports)
		}
		if rows == 0 {
			return 0, false
		}
		return sum / time.Duration(rows), true
	}
	if d, ok := mean(func(b progressBlock) bool { return b.cond == cond }); ok {
		return d, true
	}
	d, _ := mean(func(progressBlock) bool { return true })
	return d, false
}

// begin reports the sample about to run.
func (p *progress) begin(transport, cond, inst string, run int) {
	p.began = p.now()
	if p.blocks.cur >= 0 {
		p.blocks.overhead[p.blocks.cur] += p.began.Sub(p.blocks.mark)
		p.blocks.started[p.blocks.cur] = true
	}
	eta, guess := p.eta()
	p.status(Status{Transport: transport, Condition: cond, Instrument: inst, Run: run, Runs: p.runs,
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
	logf("[%d/%d] %s / %s %s run %d/%d: %s (elapsed %s, about %s)",
		p.done, p.total(), transport, cond, inst, run, p.runs, outcome,
		now.Sub(p.start).Round(time.Second), left)
}
