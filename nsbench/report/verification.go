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
		"to a listener in the server's namespace, timed by the kernel (TCP_INFO), probed just before the cell. Loss: what the client's and " +
		"the server's egress lost during the cell by the impairment's own counters (lost ÷ offered, both directions " +
		"together; loss outside the emulation counts). A cell is flagged " + flagMark + " when its RTT is off by more than " +
		"1 ms, or its loss by more than ±20 % relative once the configured loss predicts at least 225 drops (±20 % is " +
		"then three standard deviations of the binomial drop count); below that the loss is shown but not judged.")
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
	header = append(header, "Loss configured / measured")
	if rate {
		header = append(header, "Rate cap / goodput (Mbit/s)")
	}
	header = append(header, "Packets", "Verdict", "Note")
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
		row = append(row, strconv.FormatUint(r.Packets, 10), verdictText(r), dashIfEmpty(r.Note))
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

func lossText(r results.Verification) string {
	s := trimNum(r.ConfiguredLossPct) + " % / "
	if r.MeasuredLossPct == nil {
		return s + dash
	}
	s += fmt.Sprintf("%.3f %%", *r.MeasuredLossPct)
	if !r.LossJudged {
		s += " (not judged)"
	}
	return s
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
