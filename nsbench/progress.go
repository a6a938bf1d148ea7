package nsbench

import (
	"time"
)

// Status is the run's position, for a live progress line.
type Status struct {
	Transport, Condition, Instrument string
	Run, Runs                        int
	Done, Total                      int           // samples finished, samples still planned in all
	Elapsed                          time.Duration // since the first sample began
	ETA                              time.Duration // estimated time left; 0 when unknown
}

// progress counts the samples that will run and estimates the time left
// from the samples measured so far, per instrument: a 10 s iperf3 and a
// 5 GiB scp take very different times. Samples that will not run (a
// skipped transport, a path that failed to come up, an instrument the path
// cannot carry) are dropped from the plan as soon as that is known, so
// [k/N] ends at N.
type progress struct {
	runs   int
	left   map[string]int           // per instrument: samples still to run
	spent  map[string]time.Duration // per instrument: time of the finished samples
	count  map[string]int           // per instrument: finished samples
	done   int
	start  time.Time
	began  time.Time // the current sample's start
	status func(Status)
	now    func() time.Time
}

func newProgress(runs, transports, conditions int, instruments []string, status func(Status)) *progress {
	if status == nil {
		status = func(Status) {}
	}
	p := &progress{runs: runs, left: map[string]int{}, spent: map[string]time.Duration{}, count: map[string]int{},
		status: status, now: time.Now}
	for _, in := range instruments {
		p.left[in] += transports * conditions * runs
	}
	p.start = p.now()
	return p
}

func (p *progress) total() int {
	n := p.done
	for _, l := range p.left {
		n += l
	}
	return n
}

// extend plans n more samples of instrument (--runs auto past its minimum).
func (p *progress) extend(instrument string, n int) { p.left[instrument] += n }

// drop removes n planned samples of instrument that will not run.
func (p *progress) drop(instrument string, n int) {
	p.left[instrument] = max(0, p.left[instrument]-n)
}

// eta is the sum over the samples left of their instrument's mean time so
// far; an instrument not measured yet is costed at the mean of all
// samples. 0 when nothing has been measured.
func (p *progress) eta() time.Duration {
	if p.done == 0 {
		return 0
	}
	var all time.Duration
	for _, d := range p.spent {
		all += d
	}
	overall := all / time.Duration(p.done)
	var eta time.Duration
	for in, l := range p.left {
		mean := overall
		if c := p.count[in]; c > 0 {
			mean = p.spent[in] / time.Duration(c)
		}
		eta += time.Duration(l) * mean
	}
	return eta
}

// begin reports the sample about to run.
func (p *progress) begin(transport, cond, inst string, run int) {
	p.began = p.now()
	p.status(Status{Transport: transport, Condition: cond, Instrument: inst, Run: run, Runs: p.runs,
		Done: p.done, Total: p.total(), Elapsed: p.began.Sub(p.start), ETA: p.eta()})
}

// finish logs a finished sample with its outcome.
func (p *progress) finish(logf Logf, transport, cond, inst string, run int, outcome string) {
	p.spent[inst] += p.now().Sub(p.began)
	p.count[inst]++
	p.left[inst] = max(0, p.left[inst]-1)
	p.done++
	eta := "?"
	if d := p.eta(); d > 0 || p.done == p.total() {
		eta = d.Round(time.Second).String()
	}
	logf("[%d/%d] %s / %s %s run %d/%d: %s (elapsed %s, about %s left)",
		p.done, p.total(), transport, cond, inst, run, p.runs, outcome,
		p.now().Sub(p.start).Round(time.Second), eta)
}
