package instrument

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// RRUL is latency under load, after flent's Realtime Response Under Load:
// a latency probe alone (idle), then the same probe while `iperf3 --bidir
// -P 4` loads the path with 4 TCP streams each way for the duration. Value
// is the bufferbloat figure: loaded p50 − idle p50, in ms; the throughput
// both ways and the latency percentiles come with it.
//
// The probe goes through the same path every 100 ms: ICMP echo (ping) where
// the path carries ICMP, else netperf TCP_RR in demo mode, whose interim
// rate every 100 ms gives that interval's mean round trip (see
// parseNetperfDemo). The sample names the probe it used (Method).
//
// A path that stalls under load (tw's did, until its SSH keepalive gave
// up 10 min later) is bounded like every sample, by the orchestrator's
// deadline from Budget.
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

func (RRUL) Metrics() []results.Metric {
	return []results.Metric{
		{Key: "value", Label: "latency increase under load (loaded p50 − idle p50)", Unit: "ms", Better: results.BetterLower, Difference: true},
		{Key: "down_gbps", Label: "throughput down under load (4 streams)", Unit: "Gbit/s", Better: results.BetterHigher},
		{Key: "up_gbps", Label: "throughput up under load (4 streams)", Unit: "Gbit/s", Better: results.BetterHigher},
		{Key: "idle_p50_ms", Label: "idle latency p50", Unit: "ms", Better: results.BetterLower},
		{Key: "loaded_p50_ms", Label: "loaded latency p50", Unit: "ms", Better: results.BetterLower},
		{Key: "loaded_p90_ms", Label: "loaded latency p90", Unit: "ms", Better: results.BetterLower},
		{Key: "loaded_p99_ms", Label: "loaded latency p99", Unit: "ms", Better: results.BetterLower},
		{Key: "probe_loss_pct", Label: "ICMP probes unanswered under load", Unit: "%", Better: results.BetterLower},
		{Key: "probe_sent", Label: "probes sent under load (TCP_RR: transactions)", Unit: "probes"},
		{Key: "probe_unanswered", Label: "probes unanswered under load (TCP_RR: a transaction still in flight)", Unit: "probes", Better: results.BetterLower},
		{Key: "censored_wait_ms", Label: "censored: the unanswered probe's wait, a lower bound of its round trip", Unit: "ms"},
	}
}

// Needs the iperf3 server and, for a path without ICMP, netserver (every
// path reaches it: TCP_RR's own needs).
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

// latencyProbe is a tool that reads the path's round trip every 100 ms.
type latencyProbe struct {
	tool   string
	method string // what the sample's Method says
	args   func(t transport.Target, d time.Duration) []string
	// parse returns the readings and, for a probe that can lose one (ping),
	// how many it sent: 0 for one that cannot.
	parse func(out []byte) ([]probeRTT, int, error)
}

var pingProbe = latencyProbe{
	tool:   "ping",
	method: "latency by ICMP echo every 100 ms (ping -i 0.1), each probe's round trip",
	args: func(t transport.Target, d time.Duration) []string {
		return []string{"-n", "-D", "-i", "0.1", "-w", seconds(d), t.Host}
	},
	parse: func(out []byte) ([]probeRTT, int, error) {
		ps, sum, err := parsePingProbes(out)
		if err != nil {
			return nil, 0, err
		}
		if len(ps) == 0 {
			return nil, 0, fmt.Errorf("ping: all %d probes lost", sum.Transmitted)
		}
		return ps, sum.Transmitted, nil
	},
}

var netperfProbe = latencyProbe{
	tool: "netperf",
	method: "latency by netperf TCP_RR with interim results every 100 ms (-D 0.1), " +
		"each interval's mean round trip (1 / transaction rate, as flent reads it)",
	args: func(t transport.Target, d time.Duration) []string {
		return []string{"-H", t.Host, "-p", strconv.Itoa(t.Port(transport.ServiceNetperf)),
			"-t", "TCP_RR", "-l", seconds(d), "-P", "0", "-D", "0.1", "--",
			"-r", "64,64", "-P", strconv.Itoa(transport.NetperfLocalPort) + "," + strconv.Itoa(t.Port(transport.ServiceNetperfData)),
			"-o", "THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY"}
	},
	parse: func(out []byte) ([]probeRTT, int, error) {
		ps, _, err := parseNetperfDemo(out)
		return ps, 0, err
	},
}

// probeFor picks the latency probe for a path: ICMP where it is carried (a
// port forwarder does not).
func probeFor(t transport.Target) latencyProbe {
	if t.Carries.Has(transport.CarriesICMP) {
		return pingProbe
	}
	return netperfProbe
}

// run runs the probe for d and returns its readings.
func (p latencyProbe) run(ctx context.Context, job *Job, d time.Duration) ([]probeRTT, int, error) {
	res, err := job.Run(ctx, p.tool, p.args(job.Target, d)...)
	ps, sent, perr := p.parse(res.Stdout)
	if perr != nil {
		if err != nil {
			return nil, 0, fmt.Errorf("%w (%v: %s)", perr, err, parseFirstLine(res.Stderr))
		}
		return nil, 0, perr
	}
	// ping exits 1 when some probes were lost; the readings say how many.
	if err != nil && p.tool != "ping" {
		return nil, 0, fmt.Errorf("%s: %w: %s", p.tool, err, parseFirstLine(res.Stderr))
	}
	return ps, sent, nil
}

// Budget is the idle probe, then the loaded test and the probe's slack.
func (RRUL) Budget(job *Job) Budget {
	idle := min(job.Duration, rrulIdleMax)
	d := idle + job.Duration + rrulSlack
	return Budget{Planned: d, Basis: "its " + fmtSeconds(idle) + " idle probe and " + fmtSeconds(job.Duration) + " loaded test (" + fmtSeconds(d) + ")"}
}

func (r RRUL) Measure(ctx context.Context, job *Job) (Measurement, error) {
	probe := probeFor(job.Target)
	start := time.Now()
	idleFor := min(job.Duration, rrulIdleMax)
	idle, _, err := probe.run(ctx, job, idleFor)
	if err != nil {
		return Measurement{}, fmt.Errorf("idle latency: %w", err)
	}

	// The load and the probe start together; the probe outlasts iperf3.
	loadStart := time.Now()
	probeCtx, cancelProbe := context.WithCancel(ctx)
	defer cancelProbe()
	var (
		wg        sync.WaitGroup
		loaded    []probeRTT
		sent      int
		probeErr  error
		probeStop time.Time
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		loaded, sent, probeErr = probe.run(probeCtx, job, job.Duration+rrulSlack)
		probeStop = time.Now()
	}()
	load, run, err := runIperf3(ctx, job, r.Args(job), parseIperf3Bidir)
	loadEnd := time.Now()
	if err != nil {
		cancelProbe() // the probe's readings are of no use without the load
	}
	wg.Wait()
	done := time.Now()
	if err != nil {
		return Measurement{}, err
	}
	if probeErr != nil {
		return Measurement{}, fmt.Errorf("loaded latency: %w", probeErr)
	}
	return rrulMeasurement(rrulRun{
		probe: probe, idle: idle, loaded: loaded, sent: sent, load: load, iperf3: run,
		start: start, loadStart: loadStart, loadEnd: loadEnd, probeStop: probeStop, done: done, duration: job.Duration,
	})
}

// probeSilence is how long netperf's demo mode may go without a reading
// before its transaction counts as unanswered: two of its 100 ms intervals
// (a reading lands at the end of the interval it closes, so the last one
// of a healthy probe may end up to one interval before it stops).
const probeSilence = 0.2 // s

// rrulRun is what one RRUL measurement gathered.
type rrulRun struct {
	probe        latencyProbe
	idle, loaded []probeRTT
	sent         int // the loaded probes sent (ping), 0 for netperf
	load         iperf3BidirResult
	iperf3       iperf3Run
	// start is the idle probe's start; loadStart when iperf3 and the
	// loaded probe were started, loadEnd when iperf3 returned, probeStop
	// when the loaded probe did, done when both had.
	start, loadStart, loadEnd, probeStop, done time.Time
	duration                                   time.Duration
}

// rrulMeasurement reduces a run to its measurement. The loaded readings are
// those taken during iperf3's timed test: its last `duration` before it
// returned (its start-up, connecting and slow start's first moments, comes
// before; only its short result exchange after). A netperf reading is an
// interval: it counts when the interval overlaps the test.
//
// A probe left unanswered is censored, not a failed measurement: under
// the heaviest bufferbloat a TCP_RR transaction can outlast the test, and
// every ping sent in it can go unanswered. Its round trip is at least the
// time it waited (until the probe stopped): that wait joins the loaded
// readings as a lower bound, and the sample says so (censored_wait_ms), so
// every loaded figure is a lower bound ("≥").
func rrulMeasurement(r rrulRun) (Measurement, error) {
	from := unixSec(r.loadEnd) - r.duration.Seconds()
	to := unixSec(r.loadEnd)
	stop := unixSec(r.probeStop)
	if r.probeStop.IsZero() {
		stop = unixSec(r.done)
	}
	var loaded []probeRTT
	lastEnd := unixSec(r.loadStart) // the last completed reading's end (netperf)
	var transactions float64
	for _, p := range r.loaded {
		lastEnd = max(lastEnd, p.At+p.Span/2)
		if p.At+p.Span/2 >= from && p.At-p.Span/2 <= to {
			loaded = append(loaded, p)
			transactions += p.Transactions
		}
	}
	var sent, unanswered int
	var waitMs float64                  // > 0: censored
	if r.probe.tool == pingProbe.tool { // ping: each probe unanswered in the window waited at least until the probe stopped
		sent, unanswered = lostInWindow(r.loaded, r.sent, from, to)
		if len(loaded) == 0 && unanswered > 0 {
			waitMs = 1000 * (stop - to)
		}
	} else if lastEnd < to && stop-lastEnd > probeSilence { // netperf: a transaction in flight across the test's end, never answered
		sent, unanswered = int(math.Round(transactions))+1, 1
		waitMs = 1000 * (stop - lastEnd)
	} else {
		sent = int(math.Round(transactions))
	}
	if len(loaded) == 0 && waitMs == 0 {
		return Measurement{}, fmt.Errorf("loaded latency: none of the probe's %d readings fell within iperf3's test", len(r.loaded))
	}
	if len(r.idle) == 0 {
		return Measurement{}, errors.New("idle latency: no readings")
	}
	idleMs, loadedMs := rtts(r.idle), rtts(loaded)
	if waitMs > 0 {
		loadedMs = append(loadedMs, waitMs) // a lower bound: not in the series
	}
	idle50 := stats.Quantile(idleMs, 0.5)
	loaded50 := stats.Quantile(loadedMs, 0.5)
	m := Measurement{
		Value:      loaded50 - idle50,
		Unit:       "ms",
		WallSec:    r.done.Sub(r.start).Seconds(),
		MovedBytes: r.load.DownBytes + r.load.UpBytes,
		Method:     r.probe.method,
		Extra:      r.iperf3.extra(),
	}
	for k, v := range map[string]float64{
		"down_gbps":     r.load.DownBitsPerSec / 1e9,
		"up_gbps":       r.load.UpBitsPerSec / 1e9,
		"idle_p50_ms":   idle50,
		"idle_p90_ms":   stats.Quantile(idleMs, 0.9),
		"idle_p99_ms":   stats.Quantile(idleMs, 0.99),
		"loaded_p50_ms": loaded50,
		"loaded_p90_ms": stats.Quantile(loadedMs, 0.9),
		"loaded_p99_ms": stats.Quantile(loadedMs, 0.99),
		"idle_probes":   float64(len(idleMs)),
		"loaded_probes": float64(len(loadedMs)),
	} {
		m.Extra[k] = v
	}
	m.Extra["probe_sent"] = float64(sent)
	m.Extra["probe_unanswered"] = float64(unanswered)
	if r.sent > 0 {
		m.Extra["probe_loss_pct"] = lossPct(int64(unanswered), int64(sent))
	}
	if waitMs > 0 {
		m.Extra["censored_wait_ms"] = waitMs
	}
	if r.load.HasRetransmits {
		m.Extra["retransmits_down"] = float64(r.load.DownRetransmits)
		m.Extra["retransmits_up"] = float64(r.load.UpRetransmits)
	}
	// Times are seconds from the load's start (the idle readings' from the
	// idle probe's); iperf3's intervals are placed so that its last one
	// ends when iperf3 returned.
	zero := unixSec(r.loadStart)
	testStart := r.loadEnd.Sub(r.loadStart).Seconds()
	if n := len(r.load.Down); n > 0 {
		testStart -= r.load.Down[n-1].End
	}
	m.Series = []results.Series{
		throughputSeries("throughput", r.load.Down, testStart),
		throughputSeries("throughput_up", r.load.Up, testStart),
		latencySeries("latency_idle", r.idle, unixSec(r.start)),
		latencySeries("latency_loaded", loaded, zero),
	}
	return m, nil
}

// lostInWindow counts a ping run's probes sent within [from, to] and those
// of them never answered (up to ping's deadline). ping prints no time for
// an unanswered probe: it is placed by its sequence number between its
// answered neighbours (ping sends one every 100 ms).
func lostInWindow(ps []probeRTT, transmitted int, from, to float64) (sent, lost int) {
	at := make(map[int]float64, len(ps))
	var seqs []int
	for _, p := range ps {
		at[p.Seq] = p.At
		seqs = append(seqs, p.Seq)
	}
	slices.Sort(seqs)
	for seq := 1; seq <= transmitted; seq++ {
		t, answered := at[seq]
		if !answered && len(seqs) > 0 {
			i, _ := slices.BinarySearch(seqs, seq)
			switch {
			case i == 0:
				t = at[seqs[0]] - 0.1*float64(seqs[0]-seq)
			case i == len(seqs):
				t = at[seqs[i-1]] + 0.1*float64(seq-seqs[i-1])
			default:
				a, b := seqs[i-1], seqs[i]
				t = at[a] + (at[b]-at[a])*float64(seq-a)/float64(b-a)
			}
		}
		if t < from || t > to {
			continue
		}
		sent++
		if !answered {
			lost++
		}
	}
	return sent, lost
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
