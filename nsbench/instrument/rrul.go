package instrument

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// RRUL is latency under load, after flent's Realtime Response Under Load:
// a latency probe alone (idle), then the same probe while `iperf3 --bidir
// -P 4` loads the path with 4 TCP streams each way for the duration. Value
// is the bufferbloat figure: loaded p50 − idle p50, in ms; the throughput
// both ways and the latency percentiles come with it.
//
// The probes go through the same path every 100 ms, several flows at
// once as in flent's RRUL (rrul_flows.go): ICMP echo (ping) and, beside
// it, netperf TCP_RR in demo mode where the path carries ICMP; TCP_RR
// alone where it does not. TCP_RR's interim rate every 100 ms gives that
// interval's mean round trip (see parseNetperfDemo). The headline flow
// (ICMP where carried) gives the value and the unprefixed keys, as before
// the second flow; TCP_RR beside it has keys of its own
// (results.TCPRRFlow). The sample's Method names the flows, headline
// first.
//
// A path that stalls under load (tw's did, until its SSH keepalive gave
// up 10 min later) is bounded like every sample, by the orchestrator's
// deadline from Budget; so is a stalled flow, which fails the sample.
type RRUL struct{}

var _ Instrument = RRUL{}

// The test's shape.
const (
	rrulStreams = 4 // each way
	// rrulIdleMax bounds the idle probe (the duration, at most this).
	rrulIdleMax = 5 * time.Second
	// rrulSlack is how much longer than iperf3's test the loaded probe
	// runs, so that it spans iperf3's start-up (0.7 s seen on a busy
	// 2-core host) and answers to probes sent at the test's end.
	rrulSlack = 2 * time.Second
)

func (RRUL) Name() string { return "rrul" }
func (RRUL) Tool() string { return "iperf3" }

// Metrics are the headline flow's (unprefixed, as before the second flow)
// and TCP_RR's beside ICMP (results.TCPRRFlow).
func (RRUL) Metrics() []results.Metric {
	ms := []results.Metric{
		{Key: "value", Label: "latency increase under load (loaded p50 − idle p50) of the headline flow (ICMP where the path carries it, else TCP_RR)", Unit: "ms", Better: results.BetterLower, CensoredBy: results.AtLeastKey("loaded_p50_ms"), Difference: true},
		{Key: "down_gbps", Label: "throughput down under load (4 streams)", Unit: "Gbit/s", Better: results.BetterHigher},
		{Key: "up_gbps", Label: "throughput up under load (4 streams)", Unit: "Gbit/s", Better: results.BetterHigher},
		{Key: "idle_p50_ms", Label: "idle latency p50", Unit: "ms", Better: results.BetterLower},
		{Key: "loaded_p50_ms", Label: "loaded latency p50", Unit: "ms", Better: results.BetterLower, CensoredBy: results.AtLeastKey("loaded_p50_ms")},
		{Key: "loaded_p90_ms", Label: "loaded latency p90", Unit: "ms", Better: results.BetterLower, CensoredBy: results.AtLeastKey("loaded_p90_ms")},
		{Key: "loaded_p99_ms", Label: "loaded latency p99", Unit: "ms", Better: results.BetterLower, CensoredBy: results.AtLeastKey("loaded_p99_ms")},
		{Key: "probe_loss_pct", Label: "ICMP probes lost under load (unanswered while a later one was answered; not in the latency figures)", Unit: "%", Better: results.BetterLower},
		{Key: "probe_lost", Label: "ICMP probes lost under load (unanswered while a later one was answered)", Unit: "probes", Better: results.BetterLower},
		{Key: "probe_sent", Label: "probes sent under load (TCP_RR: transactions)", Unit: "probes"},
		{Key: "probe_unanswered", Label: "probes unanswered under load: lost, or still waiting at the end (TCP_RR: a transaction still in flight)", Unit: "probes", Better: results.BetterLower},
		{Key: results.CensoredWaitMs, Label: "censored: the longest wait of a probe still unanswered at the end, a lower bound of its round trip", Unit: "ms", CensoredBy: results.CensoredWaitMs},
	}
	return append(ms, besideMetrics(netperfProbe.prefix, "TCP_RR beside ICMP")...)
}

// besideMetrics declares the figures of a flow probed beside the headline
// one, under its keys' prefix; what names the flow in the labels.
func besideMetrics(prefix, what string) []results.Metric {
	at := func(key string) string { return results.AtLeastKey(prefix + key) }
	return []results.Metric{
		{Key: prefix + "value", Label: what + ": latency increase under load (loaded p50 − idle p50)", Unit: "ms", Better: results.BetterLower, CensoredBy: at("loaded_p50_ms"), Difference: true},
		{Key: prefix + "idle_p50_ms", Label: what + ": idle latency p50", Unit: "ms", Better: results.BetterLower},
		{Key: prefix + "loaded_p50_ms", Label: what + ": loaded latency p50", Unit: "ms", Better: results.BetterLower, CensoredBy: at("loaded_p50_ms")},
		{Key: prefix + "loaded_p90_ms", Label: what + ": loaded latency p90", Unit: "ms", Better: results.BetterLower, CensoredBy: at("loaded_p90_ms")},
		{Key: prefix + "loaded_p99_ms", Label: what + ": loaded latency p99", Unit: "ms", Better: results.BetterLower, CensoredBy: at("loaded_p99_ms")},
		{Key: prefix + "probe_sent", Label: what + ": transactions under load", Unit: "probes"},
		{Key: prefix + "probe_unanswered", Label: what + ": a transaction still in flight at the end", Unit: "probes", Better: results.BetterLower},
		{Key: prefix + results.CensoredWaitMs, Label: what + ": censored, the wait of a transaction left unanswered, a lower bound of its round trip", Unit: "ms", CensoredBy: prefix + results.CensoredWaitMs},
	}
}

// Needs the iperf3 server and netserver for the TCP_RR flow (every path
// reaches it: TCP_RR's own needs).
func (RRUL) Needs() Needs {
	return Needs{
		Services: []transport.Service{transport.ServiceIPerf3, transport.ServiceNetperf, transport.ServiceNetperfData},
		Carries:  transport.CarriesTCP, Exclusive: []transport.Service{transport.ServiceIPerf3},
	}
}

// Args is iperf3's command line after the program name.
func (RRUL) Args(job *Job) []string {
	return []string{"-c", job.Target.Host, "-p", strconv.Itoa(job.Target.Port(transport.ServiceIPerf3)),
		"--bidir", "-t", seconds(job.Duration), "-P", itoa(rrulStreams), "-J"}
}

// Budget is the idle probe, then the loaded test and the probe's slack.
func (RRUL) Budget(job *Job) Budget {
	idle := min(job.Duration, rrulIdleMax)
	d := idle + job.Duration + rrulSlack
	return Budget{Planned: d, Basis: "its " + fmtSeconds(idle) + " idle probe and " + fmtSeconds(job.Duration) + " loaded test (" + fmtSeconds(d) + ")"}
}

func (r RRUL) Measure(ctx context.Context, job *Job) (Measurement, error) {
	flows := flowsFor(job.Target)
	start := time.Now()
	idleFor := min(job.Duration, rrulIdleMax)
	idle, err := runFlows(ctx, job, flows, idleFor)
	if err != nil {
		return Measurement{}, fmt.Errorf("idle latency: %w", err)
	}

	// The load and the probes start together; the probes outlast iperf3.
	loadStart := time.Now()
	probeCtx, cancelProbe := context.WithCancel(ctx)
	defer cancelProbe()
	var (
		wg       sync.WaitGroup
		loaded   []probeResult
		probeErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		loaded, probeErr = runFlows(probeCtx, job, flows, job.Duration+rrulSlack)
	}()
	load, run, err := runIperf3(ctx, job, r.Args(job), parseIperf3Bidir)
	loadEnd := time.Now()
	if err != nil {
		cancelProbe() // the probes' readings are of no use without the load
	}
	wg.Wait()
	done := time.Now()
	if err != nil {
		return Measurement{}, err
	}
	if probeErr != nil {
		return Measurement{}, fmt.Errorf("loaded latency: %w", probeErr)
	}
	runs := make([]flowRun, len(flows))
	for i, f := range flows {
		runs[i] = flowRun{probe: f, idle: idle[i].readings, loaded: loaded[i].readings, sent: loaded[i].sent, stop: loaded[i].stop}
	}
	return rrulMeasurement(rrulRun{
		flows: runs, load: load, iperf3: run,
		start: start, loadStart: loadStart, loadEnd: loadEnd, done: done, duration: job.Duration,
	})
}

// rrulRun is what one RRUL measurement gathered.
type rrulRun struct {
	flows  []flowRun // the headline flow first
	load   iperf3BidirResult
	iperf3 iperf3Run
	// start is the idle probes' start; loadStart when iperf3 and the
	// loaded probes were started, loadEnd when iperf3 returned, done when
	// it and every probe had.
	start, loadStart, loadEnd, done time.Time
	duration                        time.Duration
}

// rrulMeasurement reduces a run to its measurement. The loaded readings are
// those taken during iperf3's timed test: its last `duration` before it
// returned (its start-up, connecting and slow start's first moments, comes
// before; only its short result exchange after). A netperf reading is an
// interval: it counts when the interval overlaps the test.
//
// A probe still waiting when its flow stopped is censored, not a failed
// measurement: under the heaviest bufferbloat a TCP_RR transaction can
// outlast the test, and so can the last pings sent in it. Its round trip
// is at least the time it waited (until its flow stopped): each such
// wait joins the flow's loaded readings as a lower bound, in their own
// series (results.CensoredSeries), and the sample says so (the flow's
// censored_wait_ms, the longest) and which loaded quantiles are lower
// bounds in turn (results.AtLeastKey): those a wait reaches, for a wait
// above a quantile cannot move it (one ping lost far above the median
// leaves p50 exact). Dropping the waits would bias the quantiles low.
// A ping unanswered while a later one of its flow was answered is lost,
// not waiting (lostInWindow): it counts in the loss (probe_lost,
// probe_loss_pct), never in the latency figures, so a lossy path's loss
// does not read as seconds of delay.
//
// Each flow is reduced on its own (flowRun.figures): the headline flow's
// figures take the unprefixed keys and its increase is the value; every
// other flow's take its prefix, its increase under prefix + "value".
func rrulMeasurement(r rrulRun) (Measurement, error) {
	from, to := unixSec(r.loadEnd)-r.duration.Seconds(), unixSec(r.loadEnd)
	zero := unixSec(r.loadStart) // the loaded series' time axis
	m := Measurement{
		Unit:       "ms",
		WallSec:    r.done.Sub(r.start).Seconds(),
		MovedBytes: r.load.DownBytes + r.load.UpBytes,
		Extra:      r.iperf3.extra(),
	}
	m.Extra["down_gbps"] = r.load.DownBitsPerSec / 1e9
	m.Extra["up_gbps"] = r.load.UpBitsPerSec / 1e9
	if r.load.HasRetransmits {
		m.Extra["retransmits_down"] = float64(r.load.DownRetransmits)
		m.Extra["retransmits_up"] = float64(r.load.UpRetransmits)
	}
	// Times are seconds from the load's start (the idle readings' from the
	// idle probes'); iperf3's intervals are placed so that its last one
	// ends when iperf3 returned.
	testStart := r.loadEnd.Sub(r.loadStart).Seconds()
	if n := len(r.load.Down); n > 0 {
		testStart -= r.load.Down[n-1].End
	}
	m.Series = []results.Series{
		throughputSeries("throughput", r.load.Down, testStart),
		throughputSeries("throughput_up", r.load.Up, testStart),
	}
	var probes []latencyProbe
	for i, f := range r.flows {
		stop := unixSec(f.stop)
		if f.stop.IsZero() {
			stop = unixSec(r.done)
		}
		fig, err := f.figures(from, to, zero, stop)
		if err != nil {
			if i > 0 {
				return Measurement{}, fmt.Errorf("%s flow: %w", f.probe.tool, err)
			}
			return Measurement{}, err
		}
		prefix := ""
		if i == 0 {
			m.Value = fig.increase
		} else {
			prefix = f.probe.prefix
			m.Extra[prefix+"value"] = fig.increase
		}
		for k, v := range fig.extra {
			m.Extra[prefix+k] = v
		}
		m.Series = append(m.Series,
			latencySeries(prefix+"latency_idle", f.idle, unixSec(r.start)),
			latencySeries(prefix+"latency_loaded", fig.loaded, zero))
		if len(fig.censored) > 0 {
			m.Series = append(m.Series, latencySeries(results.CensoredSeries(prefix+"latency_loaded"), fig.censored, zero))
		}
		probes = append(probes, f.probe)
	}
	m.Method = flowsMethod(probes)
	return m, nil
}

func rtts(ps []probeRTT) []float64 {
	xs := make([]float64, len(ps))
	for i, p := range ps {
		xs[i] = p.RTTMs
	}
	return xs
}

func unixSec(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// throughputSeries is iperf3's intervals in Gbit/s at their ends, shifted
// by offset seconds.
func throughputSeries(key string, ivs []iperf3Interval, offset float64) results.Series {
	s := results.Series{Key: key, Unit: "Gbit/s"}
	for _, iv := range ivs {
		s.T = append(s.T, round(offset+iv.End, 3))
		s.V = append(s.V, round(iv.BitsPerSecond/1e9, 4))
	}
	return s
}

// latencySeries is the readings in ms at their times, in seconds from zero
// (Unix seconds).
func latencySeries(key string, ps []probeRTT, zero float64) results.Series {
	s := results.Series{Key: key, Unit: "ms"}
	for _, p := range ps {
		s.T = append(s.T, round(p.At-zero, 3))
		s.V = append(s.V, round(p.RTTMs, 3))
	}
	return s
}

// round keeps d decimals: the series' resolution is the tools' (µs, ms),
// and the JSON stays small.
func round(x float64, d int) float64 {
	p := math.Pow10(d)
	return math.Round(x*p) / p
}
