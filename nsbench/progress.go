package nsbench

import (
	"time"
)

// Status is the run's position, for a live progress line.
type Status struct {
	Transport, Condition, Instrument string
	Run, Runs                        int
	Done, Total                      int           // samples finished, samples planned
	Elapsed                          time.Duration // since the first sample began
	ETA                              time.Duration // estimated time left; 0 when unknown
}

// progress counts samples and estimates the time left from the average
// sample so far (samples of one plan are of similar length: the instruments
// are time-bound, and scp's payload is the same for every run).
type progress struct {
	total, count int
	runs         int
	start        time.Time
	status       func(Status)
}

func newProgress(plan *Plan, transports, conditions, instruments int, status func(Status)) progress {
	if status == nil {
		status = func(Status) {}
	}
	return progress{total: transports * conditions * instruments * plan.Runs, runs: plan.Runs, start: time.Now(), status: status}
}

func (p *progress) eta() time.Duration {
	if p.count == 0 || p.count >= p.total {
		return 0
	}
	return time.Duration(float64(time.Since(p.start)) / float64(p.count) * float64(p.total-p.count))
}

// begin reports the sample about to run.
func (p *progress) begin(transport, cond, inst string, run int) {
	p.status(Status{Transport: transport, Condition: cond, Instrument: inst, Run: run, Runs: p.runs,
		Done: p.count, Total: p.total, Elapsed: time.Since(p.start), ETA: p.eta()})
}

// done logs a finished sample with its outcome.
func (p *progress) done(logf Logf, transport, cond, inst string, run int, outcome string) {
	p.count++
	eta := "?"
	if d := p.eta(); d > 0 || p.count == p.total {
		eta = d.Round(time.Second).String()
	}
	logf("[%d/%d] %s / %s %s run %d/%d: %s (elapsed %s, about %s left)",
		p.count, p.total, transport, cond, inst, run, p.runs, outcome,
		time.Since(p.start).Round(time.Second), eta)
}
