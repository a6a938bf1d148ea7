package instrument

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// UDPRate is seed 001's packet rate: iperf3 UDP with 200-byte payloads as
// fast as the sender can go (-b 0), server → client; value = datagrams per
// second received, with the loss at that rate and the sent rate.
//
// iperf3's "loss" at full speed is often the receiver's socket buffer
// overflowing, not the network: the measurement also records how many
// datagrams the client namespace's UDP stack dropped for lack of buffer
// (RcvbufErrors), so the report can tell host loss from network loss.
type UDPRate struct{}

var _ Instrument = UDPRate{}

func (UDPRate) Name() string { return "udp-pps" }
func (UDPRate) Tool() string { return "iperf3" }

func (UDPRate) Metrics() []results.Metric {
	return []results.Metric{
		{Key: "value", Label: "packets received", Unit: "pps", Better: results.BetterHigher},
		{Key: "sent_pps", Label: "packets sent", Unit: "pps", Better: results.BetterHigher},
		{Key: "loss_pct", Label: "loss at that rate", Unit: "%", Better: results.BetterLower},
		{Key: "rcvbuf_errors", Label: "client socket-buffer drops", Unit: "datagrams", Better: results.BetterLower},
	}
}

// Needs: iperf3's control connection is TCP, its test traffic UDP.
func (UDPRate) Needs() Needs {
	return Needs{Services: []transport.Service{transport.ServiceIPerf3}, Carries: transport.CarriesTCP | transport.CarriesUDP,
		Exclusive: []transport.Service{transport.ServiceIPerf3}}
}

func (u UDPRate) Measure(ctx context.Context, job *Job) (Measurement, error) {
	var before uint64
	if job.UDPRcvbufErrors != nil {
		var err error
		if before, err = job.UDPRcvbufErrors(ctx); err != nil {
			return Measurement{}, err
		}
	}
	r, res, err := runIperf3(ctx, job, u.Args(job), parseIperf3UDP)
	if err != nil {
		return Measurement{}, err
	}
	if r.DurationSec <= 0 {
		return Measurement{}, fmt.Errorf("iperf3 udp: no duration in its report")
	}
	if r.ReceivedPPS <= 0 {
		return Measurement{}, nothing("iperf3 udp reported 0 packets/s received: %d sent, %d received, %d lost in %.1f s",
			r.PacketsSent, r.PacketsReceived, r.Lost, r.DurationSec)
	}
	m := Measurement{
		Value:   r.ReceivedPPS,
		Unit:    "pps",
		WallSec: res.Wall.Seconds(),
		Extra:   res.extra(),
	}
	for k, v := range map[string]float64{
		"sent_pps":        float64(r.PacketsSent) / r.DurationSec,
		"loss_pct":        lossPct(r.Unreceived, r.PacketsSent),
		"sent":            float64(r.PacketsSent),
		"received":        float64(r.PacketsReceived),
		"jitter_ms":       r.JitterMs,
		"iperf3_lost_pct": r.LostPercent,
	} {
		m.Extra[k] = v
	}
	if job.SocketBuffer > 0 {
		m.Extra["socket_buffer_bytes"] = float64(job.SocketBuffer)
	}
	if job.UDPRcvbufErrors != nil {
		after, err := job.UDPRcvbufErrors(ctx)
		if err != nil {
			return Measurement{}, err
		}
		m.Extra["rcvbuf_errors"] = float64(after - before)
	}
	return m, nil
}

func lossPct(lost, sent int64) float64 {
	if sent <= 0 {
		return 0
	}
	return 100 * float64(lost) / float64(sent)
}

// Args is the tool's command line after the program name. -w sizes both
// ends' socket buffers to env.SocketBuffer: iperf3 fails ("socket buffer
// size not set correctly") when asked for more than net.core.rmem_max and
// wmem_max allow, and Debian's stock kernel allows only 208 KiB.
func (UDPRate) Args(job *Job) []string {
	args := []string{"-c", job.Target.Host, "-p", strconv.Itoa(job.Target.Port(transport.ServiceIPerf3)),
		"-u", "-l", "200", "-b", "0"}
	if job.SocketBuffer > 0 {
		args = append(args, "-w", strconv.Itoa(job.SocketBuffer))
	}
	return append(args, "-R", "-t", seconds(job.Duration), "-J")
}

// Budget is the test's duration.
func (UDPRate) Budget(job *Job) Budget { return timeBound(job.Duration) }

// MaxUDPBuffer is the socket buffer the packet-rate test asks for when the
// kernel allows it.
const MaxUDPBuffer = 4 << 20
