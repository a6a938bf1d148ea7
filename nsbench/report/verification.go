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
	w.block("Each WAN cell's condition, configured against measured. RTT: the median of 20 TCP handshakes from the client " +
		"to a listener in the server's namespace, timed by the kernel (TCP_INFO), probed just before the cell. Loss: what the client's and " +
		"the server's egress lost during the cell by the impairment's own counters (lost ÷ offered, both directions " +
		"together; loss outside the emulation counts). A cell is flagged " + flagMark + " when its RTT is off by more than " +
		"1 ms, or its loss by more than ±20 % relative once the configured loss predicts at least 225 drops (±20 % is " +
		"then three standard deviations of the binomial drop count); below that the loss is shown but not judged.")
	lines := []string{
		tableRow("Transport", "Condition", "Method", "RTT configured / measured (ms)", "Loss configured / measured", "Packets", "Verdict", "Note"),
		separatorRow(8),
	}
	for _, r := range v.doc.Verification {
		lines = append(lines, tableRow(
			v.label(r.Transport),
			r.Condition,
			dashIfEmpty(r.Method),
			num(r.ConfiguredRTTMs, 0)+" / "+optNum(r.MeasuredRTTMs, 2),
			lossText(r),
			strconv.FormatUint(r.Packets, 10),
			verdictText(r),
			dashIfEmpty(r.Note),
		))
	}
	w.block(lines...)
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
