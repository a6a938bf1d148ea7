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
		{Key: "value", Label: "latency increase under load (loaded p50 − idle p50)", Unit: "ms", Better: results.BetterLower, CensoredBy: results.AtLeastKey("loaded_p50_ms"), Difference: true},
		{Key: "down_gbps", Label: "throughput down under load (4 streams)", Unit: "Gbit/s", Better: results.BetterHigher},
		{Key: "up_gbps", Label: "throughput up under load (4 streams)", Unit: "Gbit/s", Better: results.BetterHigher},
		{Key: "idle_p50_ms", Label: "idle latency p50", Unit: "ms", Better: results.BetterLower},
		{Key: "loaded_p50_ms", Label: "loaded latency p50", Unit: "ms", Better: results.BetterLower, CensoredBy: results.AtLeastKey("loaded_p50_ms")},
		{Key: "loaded_p90_ms", Label: "loaded latency p90", Unit: "ms", Better: results.BetterLower, CensoredBy: results.AtLeastKey("loaded_p90_ms")},
		{Key: "loaded_p99_ms", Label: "loaded latency p99", Unit: "ms", Better: results.BetterLower, CensoredBy: results.AtLeastKey("loaded_p99_ms")},
		{Key: "probe_loss_pct", Label: "ICMP probes unanswered under load", Unit: "%", Better: results.BetterLower},
		{Key: "probe_sent", Label: "probes sent under load (TCP_RR: transactions)", Unit: "probes"},
		{Key: "probe_unanswered", Label: "probes unanswered under load (TCP_RR: a transaction still in flight)", Unit: "probes", Better: results.BetterLower},
		{Key: results.CensoredWaitMs, Label: "censored: the longest wait of a probe left unanswered, a lower bound of its round trip", Unit: "ms", CensoredBy: results.CensoredWaitMs},
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
// a ping sent in it can go unanswered (every one, or some). Its round trip
// is at least the time it waited (until the probe stopped): each such
// wait joins the loaded readings as a lower bound, in their own series
// (results.CensoredSeries), and the sample says so (censored_wait_ms, the
// longest) and which loaded quantiles are lower bounds in turn
// (results.AtLeastKey): those a wait reaches, for a wait above a quantile
// cannot move it (one ping lost far above the median leaves p50 exact).
// Dropping the waits would bias the quantiles low.
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
	var sent int
	var censored []probeRTT             // unanswered probes: sent At, waited RTTMs at least
	if r.probe.tool == pingProbe.tool { // ping: each probe unanswered in the window waited at least until the probe stopped
		var sentBy []float64
		sent, sentBy = lostInWindow(r.loaded, r.sent, from, to)
		for _, at := range sentBy {
			censored = append(censored, probeRTT{At: at, RTTMs: 1000 * max(0, stop-at)})
		}
	} else if lastEnd < to && stop-lastEnd > probeSilence { // netperf: a transaction in flight across the test's end, never answered
		sent = int(math.Round(transactions)) + 1
		censored = []probeRTT{{At: lastEnd, RTTMs: 1000 * (stop - lastEnd)}}
	} else {
		sent = int(math.Round(transactions))
	}
	if len(loaded) == 0 && len(censored) == 0 {
		return Measurement{}, fmt.Errorf("loaded latency: none of the probe's %d readings fell within iperf3's test", len(r.loaded))
	}
	if len(r.idle) == 0 {
		return Measurement{}, errors.New("idle latency: no readings")
	}
	idleMs, loadedMs := rtts(r.idle), append(rtts(loaded), rtts(censored)...) // the waits are lower bounds
	waitMs := 0.0                                                             // the longest wait
	for _, c := range censored {
		waitMs = max(waitMs, c.RTTMs)
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
	m.Extra["probe_unanswered"] = float64(len(censored))
	if r.sent > 0 {
		m.Extra["probe_loss_pct"] = lossPct(int64(len(censored)), int64(sent))
	}
	if len(censored) > 0 {
		m.Extra[results.CensoredWaitMs] = waitMs
		for key, q := range map[string]float64{"loaded_p50_ms": 0.5, "loaded_p90_ms": 0.9, "loaded_p99_ms": 0.99} {
			if quantileAtLeast(rtts(loaded), rtts(censored), q) {
				m.Extra[results.AtLeastKey(key)] = 1
			}
		}
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
	if len(censored) > 0 {
		m.Series = append(m.Series, latencySeries(results.CensoredSeries("latency_loaded"), censored, zero))
	}
	return m, nil
}

// lostInWindow counts a ping run's probes sent within [from, to], and
// returns, for each of them never answered (up to ping's deadline), the
// latest it can have been sent. ping prints no time for an unanswered
// probe: it is placed by its sequence number between its answered
// neighbours (ping sends one every 100 ms), and, sent before the next
// answered one, it was sent by that one's time or the window's end,
// whichever is first: so its wait until the probe stopped is a lower
// bound of its round trip.
func lostInWindow(ps []probeRTT, transmitted int, from, to float64) (sent int, lostSentBy []float64) {
	at := make(map[int]float64, len(ps))
	var seqs []int
	for _, p := range ps {
		at[p.Seq] = p.At
		seqs = append(seqs, p.Seq)
	}
	slices.Sort(seqs)
	for seq := 1; seq <= transmitted; seq++ {
		t, answered := at[seq]
		by := to
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
			if i < len(seqs) {
				by = min(by, at[seqs[i]])
			}
		}
		if t < from || t > to {
			continue
		}
		sent++
		if !answered {
			lostSentBy = append(lostSentBy, by)
		}
	}
	return sent, lostSentBy
}

// quantileAtLeast says whether quantile q (stats.Quantile's) of the
// readings and censored waits together is a lower bound: it interpolates
// between two order statistics, and is exact only when every wait lies
// above both (raising a wait cannot move them then).
func quantileAtLeast(readings, waits []float64, q float64) bool {
	rs := make([]results.Reading, 0, len(readings)+len(waits))
	for _, x := range readings {
		rs = append(rs, results.Reading{Value: x})
	}
	for _, w := range waits {
		rs = append(rs, results.Reading{Value: w, AtLeast: true})
	}
	xs := results.ValuesOf(rs)
	slices.Sort(xs)
	return results.OrderStatAtLeast(rs, xs[int(math.Ceil(q*float64(len(xs)-1)))])
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
