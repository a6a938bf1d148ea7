package instrument

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// sizes.go holds what the size sweeps share (rr_sizes, udp_sizes,
// mss_sweep): one sample runs the tool once per size, in order, each for
// the run's duration, and carries one figure per size as its extra
// values, declared as points of a curve (results.Metric.Curve, At) so the
// report draws them against the size. Its value is the geometric mean of
// the curve's points: one number per sample for the summaries, compare
// and --runs auto, that moves when any point moves and is not dominated
// by the largest size.

// Sizes is the sweeps' set (--instruments sizes). It is not in All, so the
// default run's time does not grow; it runs when named.
func Sizes() []Instrument {
	return []Instrument{RRSizes{Sizes: RRSweepSizes}, UDPSizes{Sizes: UDPSweepSizes}, MSSSweep{Sizes: MSSSweepSizes}}
}

// The sweeps' default sizes, in bytes.
var (
	// RRSweepSizes are request = response sizes from netperf's default
	// 64 B to 16 KiB (above one MSS: several segments per message).
	RRSweepSizes = []int{64, 256, 1024, 4096, 16384}
	// UDPSweepSizes are datagram payloads: 1392 B fills WireGuard's 1420 B
	// MTU (1420 - 28 B of IPv4 and UDP headers), 1472 B the veths' 1500 B;
	// a datagram above a tunnel's MTU is fragmented or lost.
	UDPSweepSizes = []int{64, 512, 1024, 1392, 1472}
	// MSSSweepSizes are TCP maximum segment sizes (iperf3 -M), from
	// Linux's least (88) to Ethernet's 1460; a path with a smaller MTU
	// lowers the MSS below what was asked.
	MSSSweepSizes = []int{88, 256, 536, 1024, 1460}
)

// sweepBudget is a sweep's planned time: the run's duration per size.
func sweepBudget(job *Job, sizes []int) Budget {
	d := time.Duration(len(sizes)) * job.Duration.Round(time.Second)
	if job.Duration < time.Second {
		d = time.Duration(len(sizes)) * time.Second
	}
	return Budget{Planned: d, Basis: fmt.Sprintf("its %d sizes of %s", len(sizes), fmtSeconds(d/time.Duration(max(1, len(sizes)))))}
}

// pointKey is the extra value holding a sweep's figure at size.
func pointKey(prefix string, size int) string { return prefix + "_" + strconv.Itoa(size) }

// pointMetrics declares one metric per size: key prefix_SIZE, labelled
// "label at SIZE", points of curve.
func pointMetrics(sizes []int, prefix, curve, label, unit, better string) []results.Metric {
	var ms []results.Metric
	for _, s := range sizes {
		ms = append(ms, results.Metric{Key: pointKey(prefix, s), Label: label + " at " + sizeText(s),
			Unit: unit, Better: better, Curve: curve, At: s})
	}
	return ms
}

// sizeText writes a size in bytes as the sweeps' labels do: "64 B",
// "16 KiB" for whole KiB from 1 KiB.
func sizeText(b int) string {
	if b >= 1024 && b%1024 == 0 {
		return strconv.Itoa(b/1024) + " KiB"
	}
	return strconv.Itoa(b) + " B"
}

// geomean is the geometric mean of xs, over the positive ones, and how
// many were positive; 0 when none was.
func geomean(xs []float64) (float64, int) {
	sum, n := 0.0, 0
	for _, x := range xs {
		if x > 0 {
			sum += math.Log(x)
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return math.Exp(sum / float64(n)), n
}

// sweep runs point once per size in order and gathers the figures: each
// point's keys go into the measurement's extras, its curve figure (the
// one the value averages) into curve. A point's error ends the sweep
// with the size named: a stall costs the sample, whose deadline covers
// every size.
func sweep(ctx context.Context, sizes []int, point func(ctx context.Context, size int) (curve float64, extra map[string]float64, wall float64, err error)) (Measurement, []float64, error) {
	m := Measurement{Extra: map[string]float64{}}
	var curve []float64
	for _, s := range sizes {
		c, extra, wall, err := point(ctx, s)
		if err != nil {
			return Measurement{}, nil, fmt.Errorf("at %s: %w", sizeText(s), err)
		}
		curve = append(curve, c)
		m.WallSec += wall
		for k, v := range extra {
			m.Extra[k] = v
		}
	}
	return m, curve, nil
}
