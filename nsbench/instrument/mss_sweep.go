package instrument

import (
	"context"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// MSSSweep is iperf3's TCP goodput (one stream, server → client) at each
// of Sizes as the maximum segment size (-M S: both ends' TCP_MAXSEG, so
// the client's SYN advertises it), each for the run's duration. The
// kernel sends no segment larger than the path allows, so an MSS above
// the tunnel's MTU less 40 B measures the tunnel's own. The curve shows
// the per-packet cost: at 88 B every byte takes 17 times the packets it
// takes at 1460 B. Its value is the geometric mean of the sizes'
// goodputs.
type MSSSweep struct{ Sizes []int }

var _ Instrument = MSSSweep{}

const curveMSSGbps = "TCP goodput by MSS"

func (MSSSweep) Name() string { return "mss_sweep" }
func (MSSSweep) Tool() string { return "iperf3" }

func (s MSSSweep) Metrics() []results.Metric {
	ms := []results.Metric{{Key: "value", Label: "TCP goodput, geometric mean over " + itoa(len(s.Sizes)) + " MSS",
		Unit: "Gbit/s", Better: results.BetterHigher}}
	return append(ms, pointMetrics(s.Sizes, "gbps", curveMSSGbps, "TCP goodput", "Gbit/s", results.BetterHigher)...)
}

func (MSSSweep) Needs() Needs { return IPerf3{}.Needs() }

func (s MSSSweep) Measure(ctx context.Context, job *Job) (Measurement, error) {
	var moved int64
	m, curve, err := sweep(ctx, s.Sizes, func(ctx context.Context, size int) (float64, map[string]float64, float64, error) {
		r, res, err := runIperf3(ctx, job, mssArgs(job, size), parseIperf3)
		if err != nil {
			return 0, nil, 0, err
		}
		if r.ReceivedBitsPerSec <= 0 {
			return 0, nil, 0, nothing("iperf3 reported %g bit/s: the client received %d bytes in %.1f s", r.ReceivedBitsPerSec, r.ReceivedBytes, r.DurationSec)
		}
		moved += r.ReceivedBytes
		extra := map[string]float64{pointKey("gbps", size): r.ReceivedBitsPerSec / 1e9}
		if r.HasRetransmits {
			extra[pointKey("retransmits", size)] = float64(r.Retransmits)
		}
		return r.ReceivedBitsPerSec / 1e9, extra, res.Wall.Seconds(), nil
	})
	if err != nil {
		return Measurement{}, err
	}
	m.Value, _ = geomean(curve)
	m.Unit, m.MovedBytes = "Gbit/s", moved
	return m, nil
}

// mssArgs is iperf3's command line for one MSS.
func mssArgs(job *Job, mss int) []string {
	return []string{"-c", job.Target.Host, "-p", strconv.Itoa(job.Target.Port(transport.ServiceIPerf3)),
		"-M", strconv.Itoa(mss), "-R", "-t", seconds(job.Duration), "-P", "1", "-J"}
}

// Budget is the run's duration per size.
func (s MSSSweep) Budget(job *Job) Budget { return sweepBudget(job, s.Sizes) }
