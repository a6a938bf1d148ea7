package report

import (
	"fmt"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// writeNarrowPath renders the verdict of every transport at a narrow hop
// (a --wan condition with mtu=): did its bulk transfers get through, how,
// and the evidence. Documents without one get no section.
func writeNarrowPath(w *writer, doc *results.Document, label func(string) string) {
	var rows []results.Verification
	for _, r := range doc.Verification {
		if r.Narrow != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	w.block("## Narrow path")
	w.block("Under a condition with a narrow hop the switch passes no IP packet longer than its MTU (a GSO frame counts its " +
		"segments' length). An IPv4 packet over it with DF set is dropped and answered with ICMP \"fragmentation needed\" " +
		"carrying the MTU, as a router would, unless the condition drops that ICMP (a PMTU black hole); one without DF is " +
		"fragmented. A transport is a **black hole** when any of its bulk transfers (iperf3, scp), or its path's set-up, " +
		"failed while the hop dropped its packets as too big (the counts named are the hop's during its failures: too big, " +
		"ICMP sent, ICMP suppressed); failures during which the hop dropped nothing are **failed, not the hop**, and failures " +
		"whose counts were not kept read **not recorded**. It **collapses** when its transfers all gave a result but its iperf3 rate " +
		"was under a tenth of the rate the path could carry: its own on the LAN, or the condition's rate cap when that is " +
		"lower; otherwise it **survives**. How it got through is read from the hop's counts over its own traffic (its path's set-up, its warm-up and its completed " +
		"transfers): nothing was too " +
		"big (its own MTU or MSS clamping fits), it was told by ICMP and went on smaller (PMTU discovery), its packets were " +
		"fragmented, or it went on although nothing told it (packetization-layer probing). The block's counts span every " +
		"transport interleaved in it.")
	header := []string{"Transport", "Condition", "Narrow hop", "Verdict", "Bulk transfers completed / stalled",
		"iperf3 1-stream (Gbit/s)", "Its traffic: too big / ICMP sent / fragmented",
		"Block: too big / ICMP sent / largest packet passed (B)", "Stall"}
	lines := []string{tableRow(header...), separatorRow(len(header))}
	for _, r := range rows {
		n := r.Narrow
		hop := fmt.Sprintf("MTU %d", n.MTU)
		if n.ICMPDropped {
			hop += ", ICMP dropped"
		}
		block := dash
		if n.Block != nil {
			block = fmt.Sprintf("%d / %d / %s", n.Block.TooBig, n.Block.ICMPSent, countOrDash(n.Block.MaxPassed))
		}
		lines = append(lines, tableRow(label(r.Transport), r.Condition, hop, narrowVerdictText(n, capBps(doc, r.Condition)),
			fmt.Sprintf("%d / %d", n.BulkCompleted, n.BulkStalled), iperf3Median(doc, r.Transport, r.Condition),
			fmt.Sprintf("%d / %d / %d", n.Row.TooBig, n.Row.ICMPSent, n.Row.Fragmented), block, dashIfEmpty(n.Stall)))
	}
	w.block(lines...)
}

// narrowVerdictText is the verdict with its evidence: "**black hole** (…
// too big, … ICMP sent …)", "survives (pmtu discovery)", "**collapses**
// (…, at 0.52 % of its LAN rate)". capBps is the condition's rate cap (0
// for none). A verdict a document holds without its evidence (one written
// before the evidence was kept) reads "not recorded".
func narrowVerdictText(n *results.NarrowPath, capBps uint64) string {
	switch n.Verdict {
	case "survives":
		return "survives (" + n.How + ")"
	case "black hole":
		if n.Failed == nil {
			return "not recorded (failed; the hop's counts during the failure were not kept)"
		}
		return "**black hole** (" + failedCounts(*n.Failed) + ")"
	case "failed, not the hop":
		if n.Failed != nil {
			return "failed, not the hop (" + failedCounts(*n.Failed) + ")"
		}
	case "not recorded":
		return "not recorded (failed; the hop's counts during the failure were not kept)"
	case "collapses":
		switch {
		case n.RateAgainst == "cap":
			return fmt.Sprintf("**collapses** (%s, at %s %% of the condition's rate cap, %s Mbit/s)", n.How, num(100*n.RateRatio, 2),
				strconv.FormatFloat(float64(capBps)/1e6, 'f', -1, 64))
		case n.RateAgainst == "" && capBps > 0:
			return "not recorded (its rate was compared with its LAN rate, not the condition's cap)"
		}
		return fmt.Sprintf("**collapses** (%s, at %s %% of its LAN rate)", n.How, num(100*n.RateRatio, 2))
	}
	return n.Verdict
}

// failedCounts names the hop's counts during a transport's failures.
func failedCounts(c results.NarrowCounts) string {
	return fmt.Sprintf("during its failures the hop dropped %d packets too big, sent %d ICMP, suppressed %d",
		c.TooBig, c.ICMPSent, c.ICMPSuppressed)
}

// capBps is the rate cap of the condition named cond, 0 without one.
func capBps(doc *results.Document, cond string) uint64 {
	for _, c := range doc.Conditions {
		if c.Name == cond && c.Profile != nil {
			return c.Profile.RateBps
		}
	}
	return 0
}

func countOrDash(n uint64) string {
	if n == 0 {
		return dash
	}
	return fmt.Sprint(n)
}

// iperf3Median is the cell's median iperf3 1-stream goodput, or a dash.
func iperf3Median(doc *results.Document, transport, condition string) string {
	var xs []float64
	for _, s := range doc.Samples {
		if s.Transport == transport && s.Condition == condition && s.Instrument == "iperf3-1" {
			xs = append(xs, s.Value)
		}
	}
	if len(xs) == 0 {
		return dash
	}
	m := stats.Median(xs)
	return fmt.Sprintf("%.3g", m)
}
