package report

import (
	"fmt"

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
		"fragmented. A transport is a **black hole** when any of its bulk transfers (iperf3, scp) gave no result within its " +
		"bound; it **collapses** when they all gave one but at under a tenth of its own iperf3 rate on the LAN; otherwise it " +
		"**survives**. How it got through is read from the hop's counts over its own traffic (its path's set-up, its warm-up and its completed " +
		"transfers): nothing was too " +
		"big (its own MTU or MSS clamping fits), it was told by ICMP and went on smaller (PMTU discovery), its packets were " +
		"fragmented, or it went on although nothing told it (packetization-layer probing). The block's counts span every " +
		"transport interleaved in it, and hold the drops of a stalled transfer.")
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
		lines = append(lines, tableRow(label(r.Transport), r.Condition, hop, narrowVerdictText(n),
			fmt.Sprintf("%d / %d", n.BulkCompleted, n.BulkStalled), iperf3Median(doc, r.Transport, r.Condition),
			fmt.Sprintf("%d / %d / %d", n.Row.TooBig, n.Row.ICMPSent, n.Row.Fragmented), block, dashIfEmpty(n.Stall)))
	}
	w.block(lines...)
}

// narrowVerdictText is "black hole", "survives (pmtu discovery)" or
// "unmeasured".
func narrowVerdictText(n *results.NarrowPath) string {
	switch n.Verdict {
	case "survives":
		return "survives (" + n.How + ")"
	case "black hole":
		return "**black hole**"
	case "collapses":
		return fmt.Sprintf("**collapses** (%s, at %s %% of its LAN rate)", n.How, num(100*n.RateRatio, 2))
	}
	return n.Verdict
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
