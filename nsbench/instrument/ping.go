package instrument

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// Ping is seed 001's latency figure: 200 ICMP echoes at 10 ms intervals from
// client to server; value = average RTT in ms, with min, max and loss.
type Ping struct {
	Count int // 0: 200
}

var _ Instrument = Ping{}

func (Ping) Name() string { return "ping" }
func (Ping) Tool() string { return "ping" }

func (Ping) Metrics() []results.Metric {
	return []results.Metric{
		{Key: "value", Label: "average RTT", Unit: "ms", Better: results.BetterLower},
		{Key: "min_ms", Label: "minimum RTT", Unit: "ms", Better: results.BetterLower},
		{Key: "mdev_ms", Label: "RTT deviation", Unit: "ms", Better: results.BetterLower},
		{Key: "loss_pct", Label: "echo loss", Unit: "%", Better: results.BetterLower},
	}
}

// Needs ICMP: a port forwarder cannot carry it (TCP_RR is its latency
// figure).
func (Ping) Needs() Needs { return Needs{Carries: transport.CarriesICMP} }

func (p Ping) Measure(ctx context.Context, job *Job) (Measurement, error) {
	res, err := job.Run(ctx, "ping", p.Args(job)...)
	r, perr := parsePing(res.Stdout)
	if perr != nil {
		if err != nil {
			return Measurement{}, fmt.Errorf("%w (%v: %s)", perr, err, parseFirstLine(res.Stderr))
		}
		return Measurement{}, perr
	}
	if !r.HasRTT {
		return Measurement{}, fmt.Errorf("ping: all %d echoes lost", r.Transmitted)
	}
	// ping exits 1 when some echoes were lost; the summary says how many.
	return Measurement{
		Value:   r.RTTAvgMs,
		Unit:    "ms",
		WallSec: res.Wall.Seconds(),
		Extra: map[string]float64{
			"min_ms": r.RTTMinMs, "max_ms": r.RTTMaxMs, "mdev_ms": r.RTTMdevMs,
			"loss_pct": r.LossPercent, "transmitted": float64(r.Transmitted),
		},
	}, nil
}

// Budget is the echoes' time at 10 ms each, plus the last one's 2 s wait.
func (p Ping) Budget(*Job) Budget {
	d := time.Duration(p.count())*10*time.Millisecond + 2*time.Second
	return Budget{Planned: d, Basis: "its " + strconv.Itoa(p.count()) + " echoes (" + fmtSeconds(d) + ")"}
}

func (p Ping) count() int {
	if p.Count == 0 {
		return 200
	}
	return p.Count
}

// Args is the tool's command line after the program name.
func (p Ping) Args(job *Job) []string {
	n := p.count()
	return []string{"-q", "-n", "-c", strconv.Itoa(n), "-i", "0.01", "-W", "2", job.Target.Host}
}
