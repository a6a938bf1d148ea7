package instrument

import (
	"context"
	"fmt"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// RRSizes is netperf's TCP_RR at each of Sizes (request = response, -r
// S,S), each for the run's duration, on tcp_rr's pinned data ports:
// transactions/s and p99 latency per size. Small messages measure a
// round trip; from a few KiB the transaction also moves several segments
// each way, so the curve shows where the tunnel's per-byte cost starts to
// tell. Its value is the geometric mean of the sizes' rates.
type RRSizes struct{ Sizes []int }

var _ Instrument = RRSizes{}

// curveRRSizes names rr_sizes' curves.
const (
	curveRRTPS = "transactions by message size"
	curveRRP99 = "p99 latency by message size"
)

func (RRSizes) Name() string { return "rr_sizes" }
func (RRSizes) Tool() string { return "netperf" }

func (r RRSizes) Metrics() []results.Metric {
	ms := []results.Metric{{Key: "value", Label: "transactions, geometric mean over " + itoa(len(r.Sizes)) + " message sizes",
		Unit: "trans/s", Better: results.BetterHigher}}
	ms = append(ms, pointMetrics(r.Sizes, "tps", curveRRTPS, "transactions", "trans/s", results.BetterHigher)...)
	return append(ms, pointMetrics(r.Sizes, "p99_us", curveRRP99, "p99 latency", "µs", results.BetterLower)...)
}

func (RRSizes) Needs() Needs { return TCPRR{}.Needs() }

func (r RRSizes) Measure(ctx context.Context, job *Job) (Measurement, error) {
	m, curve, err := sweep(ctx, r.Sizes, func(ctx context.Context, size int) (float64, map[string]float64, float64, error) {
		res, err := job.Run(ctx, "netperf", netperfRRSizedArgs(job, "TCP_RR", size)...)
		rr, perr := parseNetperfRR(res.Stdout)
		if perr != nil {
			return 0, nil, 0, perr
		}
		if err != nil {
			return 0, nil, 0, fmt.Errorf("netperf: %w: %s", err, parseFirstLine(res.Stderr))
		}
		if rr.TransPerSec <= 0 {
			return 0, nil, 0, nothing("netperf TCP_RR reported %g transactions/s: no request was answered", rr.TransPerSec)
		}
		return rr.TransPerSec, map[string]float64{
			pointKey("tps", size): rr.TransPerSec, pointKey("p50_us", size): rr.P50LatencyUs, pointKey("p99_us", size): rr.P99LatencyUs,
		}, res.Wall.Seconds(), nil
	})
	if err != nil {
		return Measurement{}, err
	}
	m.Value, _ = geomean(curve)
	m.Unit = "trans/s"
	return m, nil
}

// Budget is the run's duration per size.
func (r RRSizes) Budget(job *Job) Budget { return sweepBudget(job, r.Sizes) }
