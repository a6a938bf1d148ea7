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

// rrul probes latency with several flows at once, as flent's RRUL does:
// ICMP echo and netperf TCP_RR together where the path carries ICMP,
// TCP_RR alone where it does not (a port forwarder). The first flow is the
// headline: the sample's value and unprefixed keys are its figures; every
// other flow's are under its own key prefix (results.TCPRRFlow), so an
// ICMP round trip and a TCP_RR transaction (both ends' TCP stacks and
// netserver besides) are never pooled.

// latencyProbe is a tool that reads the path's round trip every 100 ms.
type latencyProbe struct {
	tool   string
	method string // what the sample's Method says
	// prefix keys the flow's figures when it is not the headline flow.
	prefix string
	args   func(t transport.Target, d time.Duration) []string
	// parse returns the readings and, for a probe that can lose one (ping),
	// how many it sent: 0 for one that cannot.
	parse func(out []byte) ([]probeRTT, int, error)
}

var pingProbe = latencyProbe{
	tool:   "ping",
	method: "latency by ICMP echo every 100 ms (ping -i 0.1), each probe's round trip",
	prefix: "icmp_", // unused while ICMP, where carried, is the headline flow
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

// netperfProbe's demo interval is negative: netperf then reads the clock
// at every transaction and closes an interval each 100 ms. With a
// positive one it reads the clock only after as many transactions as the
// last rate predicts, so when the load slows transactions from thousands
// a second to tens, one interval spans seconds (over wireguard-go here:
// one or two readings in a 2 s test, against ~20).
var netperfProbe = latencyProbe{
	tool: "netperf",
	method: "latency by netperf TCP_RR with interim results every 100 ms (-D -0.1, the clock read at every transaction), " +
		"each interval's mean round trip (1 / transaction rate, as flent reads it)",
	prefix: results.TCPRRFlow,
	args: func(t transport.Target, d time.Duration) []string {
		return []string{"-H", t.Host, "-p", strconv.Itoa(t.Port(transport.ServiceNetperf)),
			"-t", "TCP_RR", "-l", seconds(d), "-P", "0", "-D", "-0.1", "--",
			"-r", "64,64", "-P", strconv.Itoa(transport.NetperfLocalPort) + "," + strconv.Itoa(t.Port(transport.ServiceNetperfData)),
			"-o", "THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY"}
	},
	parse: func(out []byte) ([]probeRTT, int, error) {
		ps, _, err := parseNetperfDemo(out)
		return ps, 0, err
	},
}

// flowsFor picks the latency probe flows for a path, the headline first:
// ICMP where it is carried, with TCP_RR beside it; TCP_RR alone through a
// port forwarder.
func flowsFor(t transport.Target) []latencyProbe {
	if t.Carries.Has(transport.CarriesICMP) {
		return []latencyProbe{pingProbe, netperfProbe}
	}
	return []latencyProbe{netperfProbe}
}

// flowsMethod is the sample's Method: the headline flow's, then each
// other flow's with its keys' prefix.
func flowsMethod(flows []latencyProbe) string {
	m := flows[0].method
	for _, f := range flows[1:] {
		m += "; beside it, at the same time, " + f.method + " (its figures under " + f.prefix + " keys)"
	}
	return m
}

// probeResult is one run of a probe: its readings, how many it sent (ping;
// 0 for netperf) and when it returned.
type probeResult struct {
	readings []probeRTT
	sent     int
	stop     time.Time
}

// run runs the probe for d and returns its readings.
func (p latencyProbe) run(ctx context.Context, job *Job, d time.Duration) (probeResult, error) {
	res, err := job.Run(ctx, p.tool, p.args(job.Target, d)...)
	stop := time.Now()
	ps, sent, perr := p.parse(res.Stdout)
	if perr != nil {
		if err != nil {
			return probeResult{}, fmt.Errorf("%w (%v: %s)", perr, err, parseFirstLine(res.Stderr))
		}
		return probeResult{}, perr
	}
	// ping exits 1 when some probes were lost; the readings say how many.
	if err != nil && p.tool != "ping" {
		return probeResult{}, fmt.Errorf("%s: %w: %s", p.tool, err, parseFirstLine(res.Stderr))
	}
	return probeResult{readings: ps, sent: sent, stop: stop}, nil
}

// runFlows runs every flow at once for d and waits for them all. A flow
// that fails ends the others and fails the lot with its error (the first
// to fail; the others' are of their ending): a stalled flow costs the
// sample, within the sample's deadline.
func runFlows(ctx context.Context, job *Job, flows []latencyProbe, d time.Duration) ([]probeResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]probeResult, len(flows))
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for i, f := range flows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := f.run(ctx, job, d)
			if err != nil {
				once.Do(func() { first = err; cancel() })
			}
			out[i] = r
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return out, nil
}

// probeSilence is how long netperf's demo mode may go without a reading
// before its transaction counts as unanswered: two of its 100 ms intervals
// (a reading lands at the end of the interval it closes, so the last one
// of a healthy probe may end up to one interval before it stops).
const probeSilence = 0.2 // s

// flowRun is what one probe flow gathered in an RRUL measurement.
type flowRun struct {
	probe        latencyProbe
	idle, loaded []probeRTT
	sent         int       // the loaded probes sent (ping), 0 for netperf
	stop         time.Time // when the loaded probe returned; zero: when the measurement ended
}

// flowFigures is one flow reduced over iperf3's test [from, to] (Unix
// seconds; stop: when its loaded probe stopped): the readings within it,
// the waits of its probes left unanswered there (lower bounds), and its
// figures under their unprefixed keys (see rrulMeasurement).
type flowFigures struct {
	loaded, censored []probeRTT
	increase         float64
	extra            map[string]float64
}

func (f flowRun) figures(from, to, loadStart, stop float64) (flowFigures, error) {
	var loaded []probeRTT
	lastEnd := loadStart // the last completed reading's end (netperf)
	var transactions float64
	for _, p := range f.loaded {
		lastEnd = max(lastEnd, p.At+p.Span/2)
		if p.At+p.Span/2 >= from && p.At-p.Span/2 <= to {
			loaded = append(loaded, p)
			transactions += p.Transactions
		}
	}
	var sent, lost int
	var censored []probeRTT // probes still waiting at the end: sent At, waited RTTMs at least
	switch {
	case f.probe.tool == pingProbe.tool: // each probe still waiting at the end waited at least until the probe stopped
		var sentBy []float64
		sent, lost, sentBy = lostInWindow(f.loaded, f.sent, from, to)
		for _, at := range sentBy {
			censored = append(censored, probeRTT{At: at, RTTMs: 1000 * max(0, stop-at)})
		}
	case lastEnd < to && stop-lastEnd > probeSilence: // netperf: a transaction in flight across the test's end, never answered
		sent = int(math.Round(transactions)) + 1
		censored = []probeRTT{{At: lastEnd, RTTMs: 1000 * (stop - lastEnd)}}
	default:
		sent = int(math.Round(transactions))
	}
	if len(loaded) == 0 && len(censored) == 0 {
		return flowFigures{}, fmt.Errorf("loaded latency: none of the probe's %d readings fell within iperf3's test", len(f.loaded))
	}
	if len(f.idle) == 0 {
		return flowFigures{}, errors.New("idle latency: no readings")
	}
	idleMs, loadedMs := rtts(f.idle), append(rtts(loaded), rtts(censored)...) // the waits are lower bounds
	idle50, loaded50 := stats.Quantile(idleMs, 0.5), stats.Quantile(loadedMs, 0.5)
	out := flowFigures{loaded: loaded, censored: censored, increase: loaded50 - idle50, extra: map[string]float64{
		"idle_p50_ms":      idle50,
		"idle_p90_ms":      stats.Quantile(idleMs, 0.9),
		"idle_p99_ms":      stats.Quantile(idleMs, 0.99),
		"loaded_p50_ms":    loaded50,
		"loaded_p90_ms":    stats.Quantile(loadedMs, 0.9),
		"loaded_p99_ms":    stats.Quantile(loadedMs, 0.99),
		"idle_probes":      float64(len(idleMs)),
		"loaded_probes":    float64(len(loadedMs)),
		"probe_sent":       float64(sent),
		"probe_unanswered": float64(lost + len(censored)),
	}}
	if f.sent > 0 { // ping: its lost probes, apart from the delays
		out.extra["probe_lost"] = float64(lost)
		out.extra["probe_loss_pct"] = lossPct(int64(lost), int64(sent))
	}
	if len(censored) > 0 {
		wait := 0.0 // the longest
		for _, c := range censored {
			wait = max(wait, c.RTTMs)
		}
		out.extra[results.CensoredWaitMs] = wait
		for key, q := range map[string]float64{"loaded_p50_ms": 0.5, "loaded_p90_ms": 0.9, "loaded_p99_ms": 0.99} {
			if quantileAtLeast(rtts(loaded), rtts(censored), q) {
				out.extra[results.AtLeastKey(key)] = 1
			}
		}
	}
	return out, nil
}

// lostInWindow counts a ping run's probes sent within [from, to] and, of
// those never answered (up to ping's deadline), how many were lost, and
// for each still waiting at the end the latest it can have been sent.
// ping prints no time for an unanswered probe: it is placed by its
// sequence number between its answered neighbours (ping sends one every
// 100 ms).
//
// An unanswered probe is lost when a later probe of the run was answered:
// the path delivers a flow's echoes in order, so its reply, had it come,
// would have come first; its round trip is not a delay to bound but a
// loss, and it counts there alone. One with no later probe answered was
// still waiting when ping stopped: sent by the window's end, its wait
// until the probe stopped is a lower bound of its round trip (censored).
func lostInWindow(ps []probeRTT, transmitted int, from, to float64) (sent, lost int, waitingSentBy []float64) {
	at := make(map[int]float64, len(ps))
	var seqs []int
	for _, p := range ps {
		at[p.Seq] = p.At
		seqs = append(seqs, p.Seq)
	}
	slices.Sort(seqs)
	for seq := 1; seq <= transmitted; seq++ {
		t, answered := at[seq]
		later := false // a later probe was answered
		if !answered && len(seqs) > 0 {
			i, _ := slices.BinarySearch(seqs, seq)
			later = i < len(seqs)
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
		switch {
		case answered:
		case later:
			lost++
		default:
			waitingSentBy = append(waitingSentBy, to)
		}
	}
	return sent, lost, waitingSentBy
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
