package impair

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// The closed loop: before a cell, ProbeRTT measures the round trip the
// condition set and ProbeLoss counts what a datagram stream lost end to
// end; after it, the impairment's own counters say what the traffic met
// (diagnostics). Judge compares them with the condition.

// RTTTolerance is how far the measured RTT may be from the configured one.
const RTTTolerance = time.Millisecond

// ProbeCount is how many connects ProbeRTT makes by default;
// JitterProbeCount, under jitter (see Condition.Probes).
const (
	ProbeCount       = 20
	JitterProbeCount = 80
)

// ProbePort is where the probe listener listens (probe.go): no transport
// or fixture uses it (the "discard" port).
const ProbePort = 9

// RTT is a measured round trip: the median, min and max over the probes
// that completed.
type RTT struct {
	Median, Min, Max time.Duration
	IQR              time.Duration // the probes' interquartile range: the jitter's spread
	N                int           // completed probes
	Failed           int
}

func summarizeRTT(rtts []time.Duration, failed int) RTT {
	s := slices.Clone(rtts)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return RTT{Median: med, Min: s[0], Max: s[len(s)-1], IQR: quantile(s, 0.75) - quantile(s, 0.25), N: len(s), Failed: failed}
}

// quantile interpolates the q-quantile of sorted s linearly between the
// order statistics.
func quantile(s []time.Duration, q float64) time.Duration {
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + time.Duration((pos-float64(i))*float64(s[i+1]-s[i]))
}

// Verdict is a cell's configured condition against what was measured:
// the round trip, the loss, and the impairment's own counters over the
// cell (diagnostics). OK when the round trip and the loss hold; Note says
// what did not, and what the counters saw.
type Verdict struct {
	RTTVerdict
	LossVerdict
	CellCounts
	OK   bool
	Note string
}

// RTTVerdict is the probes' round trip against the condition's.
type RTTVerdict struct {
	ConfiguredRTT time.Duration
	MeasuredRTT   time.Duration // the probes' median
	RTTOK         bool

	// With jitter: the round trip's interquartile range the jitter makes,
	// against the probes'. JitterOK is true without jitter.
	ExpectedRTTIQR, MeasuredRTTIQR time.Duration
	JitterOK                       bool
}

// LossVerdict is the loss probe's count against the condition's loss: the
// probe's datagrams offered to the impaired directions and those that
// never arrived (Packets, Lost), lost / offered, and its interval (Wilson,
// LossConfidenceZ). When the end-to-end count is not usable, the loss
// figures are those of DrawsFallback; Packets and Lost stay the
// datagrams' count.
type LossVerdict struct {
	ConfiguredLossPct       float64
	MeasuredLossPct         float64
	LossLowPct, LossHighPct float64
	Packets                 uint64
	Lost                    uint64
	DrawsFallback
	LossJudged bool // the probe (or, falling back, the counters) counted something
	LossOK     bool // the interval holds the configured loss, or not judged
}

// DrawsFallback is the count a loss verdict falls back to when the
// end-to-end one is not usable: the impairment's own loss draws over the
// probe (LossDraws of LossDrawn frames), and why ("" when the end-to-end
// count was used).
type DrawsFallback struct {
	LossFallback         string
	LossDrawn, LossDraws uint64
}

// CellCounts are the impairment's own counters over the cell.
type CellCounts struct {
	CounterPackets, CounterLost uint64
	CounterLossPct              float64
}

// Judge compares c with the RTT probed before a cell, the loss probe's
// count, the impairment's counters over the loss probe (during) and over
// the cell (each already the difference of two snapshots). The loss
// verdict is the end-to-end count's: it holds when the count's interval
// holds the configured loss. When that count is not usable (the probe's
// own sockets dropped datagrams, a receiver's count was not closed, or
// the impairment dropped probe datagrams other than by its loss draws:
// queue limit, socket drops, send errors), the verdict falls back to the
// impairment's loss draws over the probe, and the note says so and why.
// The cell's counters only add notes.
func Judge(c Condition, rtt RTT, e2e EndToEnd, during, cell []Counters) Verdict {
	var v Verdict
	var notes, more []string
	v.RTTVerdict, notes = judgeRTT(c, rtt)
	v.LossVerdict, more = judgeLoss(c, e2e, during)
	notes = append(notes, more...)
	v.CellCounts, more = countCell(cell)
	notes = append(notes, more...)
	v.OK = v.RTTOK && v.LossOK && v.JitterOK
	v.Note = strings.Join(notes, "; ")
	return v
}

// judgeRTT judges the probes' round trip and, with jitter, its spread.
func judgeRTT(c Condition, rtt RTT) (v RTTVerdict, notes []string) {
	v.ConfiguredRTT, v.MeasuredRTT = c.RTT, rtt.Median
	off := rtt.Median - c.RTT
	// A jittered RTT's median moves with the draws: the tolerance widens
	// by half the spread the jitter makes.
	tolerance := RTTTolerance + c.ExpectedRTTIQR()/2
	v.RTTOK = rtt.N > 0 && off.Abs() <= tolerance
	switch {
	case rtt.N == 0:
		notes = append(notes, "RTT not measured")
	case !v.RTTOK:
		notes = append(notes, fmt.Sprintf("RTT off by %s (tolerance ±%.2f ms)", fmtOffset(off), ms(tolerance)))
	}
	if rtt.Failed > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d RTT probes failed", rtt.Failed, rtt.Failed+rtt.N))
	}
	v.JitterOK = true
	v.MeasuredRTTIQR = rtt.IQR
	if c.Jitter > 0 {
		v.ExpectedRTTIQR = c.ExpectedRTTIQR()
		ratio := float64(rtt.IQR) / float64(v.ExpectedRTTIQR)
		v.JitterOK = rtt.N > 3 && ratio >= JitterIQRLow && ratio <= JitterIQRHigh
		if !v.JitterOK {
			notes = append(notes, fmt.Sprintf("RTT interquartile range %.2f ms, the jitter makes %.2f ms (accepted ×%.1f to ×%.1f)",
				ms(rtt.IQR), ms(v.ExpectedRTTIQR), JitterIQRLow, JitterIQRHigh))
		}
	}
	return v, notes
}

// judgeLoss judges the loss probe's end-to-end count, or falls back to
// the impairment's loss draws over the probe (during).
func judgeLoss(c Condition, e2e EndToEnd, during []Counters) (v LossVerdict, notes []string) {
	v.ConfiguredLossPct = c.LossPct
	v.Packets, v.Lost = e2e.Offered(), e2e.Lost()
	v.LossFallback = e2e.Unusable()
	if v.Packets == 0 && v.LossFallback == "" {
		v.LossFallback = "no loss probe datagram counted"
	}
	draws, drawn, astray := lossDraws(during)
	if astray > 0 {
		v.LossFallback = joinWhy(v.LossFallback, fmt.Sprintf("the impairment lost %d frames during the probe other than by its loss draws", astray))
	}
	k, n, what := v.Lost, v.Packets, fmt.Sprintf("end to end (%d of %d datagrams)", v.Lost, v.Packets)
	if v.LossFallback != "" {
		v.LossDraws, v.LossDrawn = draws, drawn
		k, n, what = draws, drawn, fmt.Sprintf("by the impairment's loss draws over the probe (%d of %d frames)", draws, drawn)
		if n > 0 {
			notes = append(notes, "loss judged by the impairment's loss-drop counters over the probe, not end to end: "+v.LossFallback)
		}
	}
	if n == 0 {
		v.LossOK = true
		notes = append(notes, "loss not judged: "+v.LossFallback)
	} else {
		v.LossJudged = true
		v.MeasuredLossPct = 100 * float64(k) / float64(n)
		lo, hi := stats.Wilson(k, n, LossConfidenceZ)
		v.LossLowPct, v.LossHighPct = 100*lo, 100*hi
		v.LossOK = c.LossPct >= v.LossLowPct && c.LossPct <= v.LossHighPct
		if !v.LossOK {
			notes = append(notes, fmt.Sprintf("loss %.3f %% %s, its %.1f %% interval %.3f–%.3f %% does not hold the configured %s %%",
				v.MeasuredLossPct, what, 100*LossConfidence, v.LossLowPct, v.LossHighPct, formatFloat(c.LossPct)))
		}
	}
	if e2e.SendErrors > 0 {
		notes = append(notes, fmt.Sprintf("%d loss probe datagrams refused by a socket (not counted)", e2e.SendErrors))
	}
	return v, notes
}

// countCell sums the impaired directions' counters over the cell, with
// notes on drops by the queue limit and losses outside the emulation.
func countCell(cell []Counters) (v CellCounts, notes []string) {
	var overflow, outside uint64
	for _, d := range cell {
		v.CounterPackets += d.Offered()
		v.CounterLost += d.Lost()
		overflow += d.Overlimits
		outside += d.SocketDrops + d.SendErrors
	}
	if v.CounterPackets > 0 {
		v.CounterLossPct = 100 * float64(v.CounterLost) / float64(v.CounterPackets)
	}
	if overflow > 0 {
		notes = append(notes, fmt.Sprintf("%d packets dropped by the queue limit", overflow))
	}
	if outside > 0 {
		notes = append(notes, fmt.Sprintf("%d packets lost outside the emulation", outside))
	}
	return v, notes
}

// lossDraws sums the impaired directions' counters over the loss probe:
// the frames the loss draws dropped, the frames that drew (everything the
// impairment read), and the frames it lost otherwise (queue limit,
// socket drops, send errors).
func lossDraws(during []Counters) (draws, drawn, astray uint64) {
	for _, d := range during {
		overflow := min(d.Overlimits, d.Dropped) // drops by the queue limit, not drawn
		draws += d.Dropped - overflow
		drawn += d.Sent + d.Dropped + d.Backlog
		astray += overflow + d.SocketDrops + d.SendErrors
	}
	return draws, drawn, astray
}

func joinWhy(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func fmtOffset(d time.Duration) string {
	return fmt.Sprintf("%+.2f ms", float64(d)/float64(time.Millisecond))
}

// The accepted ratio of the probes' RTT interquartile range to the one the
// jitter makes: JitterProbeCount probes estimate it to about ±12 %, and
// the probe path adds its own spread.
const (
	JitterIQRLow  = 0.5
	JitterIQRHigh = 1.6
)

// RateTolerance is how far below a rate cap a lossless bulk TCP transfer
// may stay: TCP/IP and Ethernet headers take about 4.4 % of the wire rate
// at a 1500-byte MTU, and slow start costs a little more.
const RateTolerance = 0.10

// RateVerdict is a rate-capped condition against the bulk TCP goodput
// measured through it (iperf3, one stream).
type RateVerdict struct {
	ConfiguredBps uint64
	MeasuredBps   float64
	Judged        bool // a measurement existed
	OK            bool
	Note          string
}

// JudgeRate checks that goodput never exceeds the rate, and, on a
// lossless condition (where TCP can fill the link), that it reaches the
// rate within RateTolerance. With loss, TCP's own loss bound sets the
// goodput; only the cap is judged.
func JudgeRate(c Condition, goodputBps float64, measured bool) RateVerdict {
	v := RateVerdict{ConfiguredBps: c.RateBps, MeasuredBps: goodputBps, Judged: measured, OK: true}
	if c.RateBps == 0 || !measured {
		if c.RateBps > 0 {
			v.Note = "no iperf3 1-stream sample: the rate was not judged"
		}
		return v
	}
	rate := float64(c.RateBps)
	switch {
	case goodputBps > rate*1.005:
		v.OK = false
		v.Note = fmt.Sprintf("goodput %s is above the %s cap", formatRate1(goodputBps), FormatRate(c.RateBps))
	case c.LossPct == 0 && goodputBps < rate*(1-RateTolerance):
		v.OK = false
		v.Note = fmt.Sprintf("goodput %s is more than %.0f %% below the %s cap on a lossless path", formatRate1(goodputBps), 100*RateTolerance, FormatRate(c.RateBps))
	case c.LossPct > 0:
		v.Note = fmt.Sprintf("goodput %s under the %s cap (with loss, TCP's loss bound sets the goodput; only the cap is judged)", formatRate1(goodputBps), FormatRate(c.RateBps))
	}
	return v
}

// formatRate1 is FormatRate with one decimal, for measured rates.
func formatRate1(bps float64) string {
	return FormatRate(uint64(math.Round(bps/1e5) * 1e5))
}
