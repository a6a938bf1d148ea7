package instrument

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// IPerf3 is `iperf3 -c HOST -p PORT -R -t DUR -P N -J`: TCP goodput from
// server to client, in Gbit/s (end.sum_received.bits_per_second).
type IPerf3 struct{ Streams int }

var _ Instrument = IPerf3{}

func (i IPerf3) Name() string { return "iperf3-" + itoa(i.Streams) }
func (IPerf3) Tool() string   { return "iperf3" }

func (IPerf3) Metrics() []results.Metric {
	return []results.Metric{
		{Key: "value", Label: "goodput", Unit: "Gbit/s", Better: results.BetterHigher},
		{Key: "retransmits", Label: "TCP retransmits", Unit: "segments", Better: results.BetterLower},
		{Key: results.HostCPUPerGB, Label: "host CPU per GB moved", Unit: "CPU-s/GB", Better: results.BetterLower},
		{Key: results.TransportCPUPerGB, Label: "tunnel's own CPU per GB moved", Unit: "CPU-s/GB", Better: results.BetterLower},
	}
}

func (IPerf3) Needs() Needs {
	return Needs{Services: []transport.Service{transport.ServiceIPerf3}, Carries: transport.CarriesTCP,
		Exclusive: []transport.Service{transport.ServiceIPerf3}}
}

func (i IPerf3) Measure(ctx context.Context, job *Job) (Measurement, error) {
	r, res, err := runIperf3(ctx, job, i.Args(job), parseIperf3)
	if err != nil {
		return Measurement{}, err
	}
	if r.ReceivedBitsPerSec <= 0 {
		return Measurement{}, nothing("iperf3 reported %g bit/s: the client received %d bytes in %.1f s (the server sent %d)",
			r.ReceivedBitsPerSec, r.ReceivedBytes, r.DurationSec, r.SentBytes)
	}
	m := goodput(r, res)
	if r.HasRetransmits {
		m.Extra["retransmits"] = float64(r.Retransmits)
	}
	return m, nil
}

// Budget is the test's duration.
func (IPerf3) Budget(job *Job) Budget { return timeBound(job.Duration) }

// Args is the tool's command line after the program name.
func (i IPerf3) Args(job *Job) []string {
	return []string{"-c", job.Target.Host, "-p", strconv.Itoa(job.Target.Port(transport.ServiceIPerf3)),
		"-R", "-t", seconds(job.Duration), "-P", itoa(i.Streams), "-J"}
}

// iperf3Run is one iperf3 client run and how long it waited for the
// server to be free first.
// goodput is a TCP iperf3 run's measurement: the client's received rate,
// the bytes it moved, the run's extras and its throughput over time.
func goodput(r iperf3Result, res iperf3Run) Measurement {
	m := Measurement{
		Value:      r.ReceivedBitsPerSec / 1e9,
		Unit:       "Gbit/s",
		WallSec:    res.Wall.Seconds(),
		MovedBytes: r.ReceivedBytes,
		Extra:      res.extra(),
	}
	if len(r.Intervals) > 0 {
		m.Series = []results.Series{throughputSeries("throughput", r.Intervals, 0)}
	}
	return m
}

type iperf3Run struct {
	proc.Result
	idleWait time.Duration
}

// extra starts a sample's extra values with the wait, when there was one.
func (r iperf3Run) extra() map[string]float64 {
	m := map[string]float64{}
	if r.idleWait > 0 {
		m["server_idle_wait_sec"] = r.idleWait.Seconds()
	}
	return m
}

// runIperf3 runs iperf3 -J and parses its report. iperf3 reports its own
// errors inside the JSON, even with a non-zero exit: the output is parsed
// first, so the sample carries iperf3's message. The orchestrator has
// waited for an idle server before the meters started; a server that still
// answers busy (a warm-up follows the previous test without that wait) is
// waited for and asked once more, not failed.
func runIperf3[T any](ctx context.Context, job *Job, args []string, parse func([]byte) (T, error)) (T, iperf3Run, error) {
	var run iperf3Run
	r, res, err := runIperf3Once(ctx, job, args, parse)
	run.Result = res
	if err == nil || job.ServerIdle == nil || !strings.Contains(err.Error(), "server is busy") {
		return r, run, err
	}
	waited, werr := job.ServerIdle(ctx, transport.IPerf3Port)
	run.idleWait = waited
	if werr != nil {
		return r, run, fmt.Errorf("%w; then %v", err, werr)
	}
	r, run.Result, err = runIperf3Once(ctx, job, args, parse)
	return r, run, err
}

func runIperf3Once[T any](ctx context.Context, job *Job, args []string, parse func([]byte) (T, error)) (T, proc.Result, error) {
	res, err := job.Run(ctx, "iperf3", args...)
	r, perr := parse(res.Stdout)
	if perr != nil {
		if err != nil {
			perr = fmt.Errorf("%w (%v)", perr, err)
		}
		return r, res, perr
	}
	if err != nil {
		return r, res, fmt.Errorf("iperf3: %w: %s", err, parseFirstLine(res.Stderr))
	}
	return r, res, nil
}

func itoa(n int) string { return strconv.Itoa(n) }
