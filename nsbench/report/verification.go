package report

import (
	"fmt"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// flagMark marks a results row whose condition did not verify, and the
// verification rows that say why.
const flagMark = "⚠"

// writeVerification renders the closed-loop check of every impaired cell:
// the condition configured against the one measured. Documents without
// verification records (the reference's, LAN-only runs) get no section.
func (v *view) writeVerification(w *writer) {
	if len(v.doc.Verification) == 0 {
		return
	}
	w.block("## Verification")
	w.block("Each WAN cell's condition, configured against measured. RTT: the median of 20 TCP handshakes (80 under jitter) from the client " +
		"to a listener in the server's namespace, timed by the kernel (TCP_INFO), probed just before the cell. Loss, end to end: just " +
		"before the cell the client sends a paced stream of numbered UDP datagrams (4000 a second for 4 s, fewer under a rate cap: " +
		"at most a tenth of it) to that listener, which counts each arrival and echoes it; the client counts the echoes. Each count " +
		"closes at a marker sent over the receiver's loopback, so a receiver the host schedules late still counts everything that " +
		"arrived. Lost ÷ offered over both directions is the measured loss, given with its 99.7 % interval (Wilson score, " +
		"three standard deviations). When that count cannot be the path's loss (the probe's own sockets dropped datagrams, a " +
		"receiver did not catch up within a second, or the impairment lost probe frames other than by its loss draws), the loss is " +
		"judged by the impairment's own loss-drop counters over the probe instead, marked \"fallback\" with the reason in the note. " +
		"The impairment's own counters over the cell (lost ÷ offered, both directions; loss outside the " +
		"emulation counts) are shown beside it as a diagnostic. A cell is flagged " + flagMark + " when its RTT is off by more than " +
		"1 ms, or when the loss interval does not hold the configured loss.")
	jitter, rate := false, false
	for _, r := range v.doc.Verification {
		jitter = jitter || r.ExpectedRTTIQRMs != nil
		rate = rate || r.ConfiguredRateBps > 0
	}
	if jitter || rate {
		w.block("Jitter: the interquartile range of those handshakes (probed 2 × jitter apart, so that no probe queues behind the last) " +
			"against the one the configured jitter makes (two independent uniform draws, one per direction: jitter × (4 − 2√2)); " +
			"flagged outside ×0.5 to ×1.6. Rate: the median iperf3 1-stream " +
			"goodput of the cell against the cap; flagged above the cap, or, on a lossless condition, more than 10 % below it " +
			"(headers take about 4.4 % of the wire rate); with loss, TCP's loss bound sets the goodput and only the cap is judged.")
	}
	header := []string{"Transport", "Condition", "Method", "RTT configured / measured (ms)"}
	if jitter {
		header = append(header, "RTT interquartile range expected / measured (ms)")
	}
	header = append(header, "Loss configured / measured end to end (interval)")
	if rate {
		header = append(header, "Rate cap / goodput (Mbit/s)")
	}
	header = append(header, "Datagrams lost / offered", "Impairment counters: loss (packets)", "Verdict", "Note")
	lines := []string{tableRow(header...), separatorRow(len(header))}
	for _, r := range v.doc.Verification {
		row := []string{v.label(r.Transport), r.Condition, dashIfEmpty(r.Method),
			num(r.ConfiguredRTTMs, 0) + " / " + optNum(r.MeasuredRTTMs, 2)}
		if jitter {
			row = append(row, optNum(r.ExpectedRTTIQRMs, 2)+" / "+optNum(r.MeasuredRTTIQRMs, 2))
		}
		row = append(row, lossText(r))
		if rate {
			row = append(row, rateText(r))
		}
		row = append(row, datagramsText(r), countersText(r), verdictText(r), dashIfEmpty(r.Note))
		lines = append(lines, tableRow(row...))
	}
	w.block(lines...)
}

func rateText(r results.Verification) string {
	if r.ConfiguredRateBps == 0 {
		return dash
	}
	s := trimNum(float64(r.ConfiguredRateBps)/1e6) + " / "
	if r.MeasuredRateBps == nil {
		return s + dash
	}
	return s + num(*r.MeasuredRateBps/1e6, 1)
}

// lossText is the configured loss against the end-to-end count with its
// interval. A document from before the loss probe measured the loss by
// the impairment's counters alone: that figure says so.
func lossText(r results.Verification) string {
	s := trimNum(r.ConfiguredLossPct) + " % / "
	switch {
	case r.MeasuredLossPct == nil:
		return s + dash
	case r.LossProbeDatagrams == 0:
		s += fmt.Sprintf("%.3f %% (impairment counters, not end to end)", *r.MeasuredLossPct)
	default:
		s += fmt.Sprintf("%.3f %%", *r.MeasuredLossPct)
		if r.LossLowPct != nil && r.LossHighPct != nil {
			s += fmt.Sprintf(" (%.3f–%.3f %%)", *r.LossLowPct, *r.LossHighPct)
		}
		if r.LossFallback != "" {
			s += " (fallback: the impairment's loss draws over the probe)"
		}
	}
	if !r.LossJudged {
		s += " (not judged)"
	}
	return s
}

func datagramsText(r results.Verification) string {
	if r.LossProbeDatagrams == 0 {
		return dash
	}
	return strconv.FormatUint(r.LossProbeLost, 10) + " / " + strconv.FormatUint(r.LossProbeDatagrams, 10)
}

func countersText(r results.Verification) string {
	switch {
	case r.CounterLossPct != nil:
		return fmt.Sprintf("%.3f %% (%d)", *r.CounterLossPct, r.Packets)
	case r.LossProbeDatagrams == 0 && r.MeasuredLossPct != nil:
		return fmt.Sprintf("%.3f %% (%d)", *r.MeasuredLossPct, r.Packets) // the old documents' one figure
	}
	return dash
}

func verdictText(r results.Verification) string {
	if r.OK {
		return "ok"
	}
	return flagMark + " off"
}

func optNum(x *float64, prec int) string {
	if x == nil {
		return dash
	}
	return num(*x, prec)
}

func trimNum(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func dashIfEmpty(s string) string {
	if s == "" {
		return dash
	}
	return s
}

// unverified reports whether transport's cell under condition failed
// verification.
func (v *view) unverified(transport, condition string) bool {
	for _, r := range v.doc.Verification {
		if r.Transport == transport && r.Condition == condition && !r.OK {
			return true
		}
	}
	return false
}

// verificationFootnote is the line under a results table with flagged rows.
func verificationFootnote() string {
	return flagMark + " The measured RTT or loss of this cell was off the configured condition: see Verification."
}
