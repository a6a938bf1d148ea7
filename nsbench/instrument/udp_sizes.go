package instrument

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// UDPSizes is iperf3 UDP at each of Sizes as the datagram payload (-l S),
// as fast as the sender goes (-b 0), server → client, each for the run's
// duration, like udp-pps: received goodput (Mbit/s) and the loss per
// size. A datagram larger than the path's MTU is fragmented on the way
// (and lost whole when one fragment is) or dropped, so the curve shows
// where the tunnel's MTU lies. Its value is the geometric mean of every
// size's goodput, a size that received nothing at its floor (one datagram
// in the test; udpSizesValue); such a size records 0 Mbit/s and its loss,
// and the sample fails only when no size received anything.
type UDPSizes struct{ Sizes []int }

var _ Instrument = UDPSizes{}

const (
	curveUDPMbps = "UDP goodput by datagram size"
	curveUDPLoss = "UDP loss by datagram size"
)

func (UDPSizes) Name() string { return "udp_sizes" }
func (UDPSizes) Tool() string { return "iperf3" }

func (u UDPSizes) Metrics() []results.Metric {
	ms := []results.Metric{{Key: "value", Label: "UDP goodput, geometric mean over " + itoa(len(u.Sizes)) + " datagram sizes",
		Unit: "Mbit/s", Better: results.BetterHigher}}
	ms = append(ms, pointMetrics(u.Sizes, "mbps", curveUDPMbps, "UDP goodput", "Mbit/s", results.BetterHigher)...)
	return append(ms, pointMetrics(u.Sizes, "loss_pct", curveUDPLoss, "UDP loss", "%", results.BetterLower)...)
}

func (UDPSizes) Needs() Needs { return UDPRate{}.Needs() }

func (u UDPSizes) Measure(ctx context.Context, job *Job) (Measurement, error) {
	m, curve, err := sweep(ctx, u.Sizes, func(ctx context.Context, size int) (float64, map[string]float64, float64, error) {
		r, res, err := runIperf3(ctx, job, udpSizeArgs(job, size), parseIperf3UDP)
		if err != nil {
			return 0, nil, 0, err
		}
		if r.BlockSize != 0 && r.BlockSize != size {
			return 0, nil, 0, fmt.Errorf("iperf3 sent %d-byte datagrams, asked for %d", r.BlockSize, size)
		}
		mbps := r.ReceivedBitsPerSec / 1e6
		return mbps, map[string]float64{
			pointKey("mbps", size):     mbps,
			pointKey("loss_pct", size): lossPct(r.Unreceived, r.PacketsSent),
			pointKey("pps", size):      r.ReceivedPPS,
			pointKey("sent", size):     float64(r.PacketsSent),
		}, res.Wall.Seconds(), nil
	})
	if err != nil {
		return Measurement{}, err
	}
	v, n := udpSizesValue(u.Sizes, curve, job.Duration)
	if n == 0 {
		return Measurement{}, nothing("iperf3 udp received no datagram at any of %d sizes", len(u.Sizes))
	}
	m.Value, m.Unit = v, "Mbit/s"
	m.Extra["sizes_received"] = float64(n)
	return m, nil
}

// udpSizeArgs is iperf3's command line for one size, with udp-pps's
// socket buffer.
func udpSizeArgs(job *Job, size int) []string {
	args := []string{"-c", job.Target.Host, "-p", strconv.Itoa(job.Target.Port(transport.ServiceIPerf3)),
		"-u", "-l", strconv.Itoa(size), "-b", "0"}
	if job.SocketBuffer > 0 {
		args = append(args, "-w", strconv.Itoa(job.SocketBuffer))
	}
	return append(args, "-R", "-t", seconds(job.Duration), "-J")
}

// Budget is the run's duration per size.
func (u UDPSizes) Budget(job *Job) Budget { return sweepBudget(job, u.Sizes) }

// udpSizesValue is the sweep's value: the geometric mean of every size's
// goodput (mbps, Mbit/s, in sizes' order) over d, each sample over the
// same sizes, a size that received nothing counted at its floor — one
// datagram of its size in d, the least a size that received anything can
// show. So more received at any size never lowers the value: a mean over
// only the sizes that received would read a build that newly passes
// 1472-byte datagrams as slower ([10 80 150 200 0] → 70.0, [10 80 150 200
// 5] → 41.3). received is how many sizes received any; with none the
// value is 0 (the sample fails).
func udpSizesValue(sizes []int, mbps []float64, d time.Duration) (value float64, received int) {
	sum := 0.0
	for i, x := range mbps {
		if x > 0 {
			received++
		} else {
			x = float64(sizes[i]) * 8 / d.Seconds() / 1e6
		}
		sum += math.Log(x)
	}
	if received == 0 {
		return 0, 0
	}
	return math.Exp(sum / float64(len(mbps))), received
}
