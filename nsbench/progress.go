package nsbench

import (
	"time"
)

// progress counts samples and estimates the time left from the average
// sample so far.
type progress struct {
	total, count int
	runs         int
	start        time.Time
}

func newProgress(plan *Plan, transports, instruments int) progress {
	return progress{total: transports * instruments * plan.Runs, runs: plan.Runs, start: time.Now()}
}

func (p *progress) done(logf Logf, transport, cond, inst string, run int, outcome string) {
	p.count++
	elapsed := time.Since(p.start)
	eta := "?"
	if p.count > 0 && p.count <= p.total {
		left := time.Duration(float64(elapsed) / float64(p.count) * float64(p.total-p.count))
		eta = left.Round(time.Second).String()
	}
	logf("[%d/%d] %s / %s %s run %d/%d: %s (elapsed %s, about %s left)",
		p.count, p.total, transport, cond, inst, run, p.runs, outcome,
		elapsed.Round(time.Second), eta)
}
