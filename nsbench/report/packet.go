package report

import (
	"fmt"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// Instruments of the packet-rate table (seed 001's measurements).
const (
	instPing  = "ping"
	instUDP   = "udp-pps"
	instReady = "ready"
)

// writePacketTable renders, for one condition, the table of the measurements
// tw's benchmark lacks: ICMP latency, 200-byte UDP packet rate with its loss,
// and time to ready. It is left out when the run measured none of them.
func writePacketTable(w *writer, v *view, c results.Condition) {
	if !v.hasAny(c.Name, instPing, instUDP, instReady) {
		return
	}
	label := c.Label
	if label == "" {
		label = c.Name
	}
	w.block("### Packet rate and latency — " + mdText(label))
	header := []string{"Transport", "ping avg / min (ms)", "UDP 200 B (kpps received)", "UDP loss (host drops)", "time to ready (s)"}
	lines := []string{tableRow(header...), separatorRow(len(header))}
	var notes []string
	for _, t := range v.order {
		if _, ok := v.skipReason(t, c.Name); ok {
			lines = append(lines, tableRow(v.label(t), skippedCell, dash, dash, dash))
			continue
		}
		ping, udp := v.samples(t, c.Name, instPing), v.samples(t, c.Name, instUDP)
		lines = append(lines, tableRow(v.label(t), v.mark(pingCell(ping), t, c.Name, instPing),
			v.mark(kppsCell(udp, v.fullRuns()), t, c.Name, instUDP), udpLossCell(udp), readyCell(v.samples(t, c.Name, instReady))))
		for _, inst := range []string{instPing, instUDP} {
			if reason, ok := v.instrumentSkip(t, c.Name, inst); ok {
				notes = append(notes, fmt.Sprintf("%s, %s: %s", mdText(v.label(t)), inst, mdText(reason)))
			}
		}
	}
	w.block(lines...)
	if len(notes) > 0 {
		w.block("— not measurable: " + strings.Join(notes, "; ") + ".")
	}
}

func (v *view) hasAny(condition string, instruments ...string) bool {
	for _, s := range v.doc.Samples {
		for _, in := range instruments {
			if s.Condition == condition && s.Instrument == in {
				return true
			}
		}
	}
	return false
}

// instrumentSkip reports why one instrument could not measure a transport.
func (v *view) instrumentSkip(transport, condition, instrument string) (string, bool) {
	for _, s := range v.doc.Skipped {
		if s.Instrument == instrument && s.Transport == transport && (s.Condition == "" || s.Condition == condition) {
			return s.Reason, true
		}
	}
	return "", false
}

func extras(samples []results.Sample, key string) []float64 {
	var xs []float64
	for _, s := range samples {
		if v, ok := s.Extra[key]; ok {
			xs = append(xs, v)
		}
	}
	return xs
}

// pingCell is a cell's ping samples as "avg / min" in ms.
func pingCell(s []results.Sample) string {
	if len(s) == 0 {
		return dash
	}
	return medianCell(values(s), 2) + " / " + medianCell(extras(s, "min_ms"), 2)
}

// kppsCell is a cell's udp-pps samples in thousands of packets received
// per second, as a range over runs runs.
func kppsCell(s []results.Sample, runs int) string {
	kpps := make([]float64, len(s))
	for i, x := range s {
		kpps[i] = x.Value / 1000
	}
	return rangeCell(kpps, 1, runs)
}

// udpLossCell shows the share of datagrams that never arrived and, in
// brackets, the share the client's own socket buffer dropped: loss that is
// the host's, not the network's.
func udpLossCell(s []results.Sample) string {
	if len(s) == 0 {
		return dash
	}
	cell := medianCell(extras(s, "loss_pct"), 1) + " %"
	var host []float64
	for _, x := range s {
		drops, ok := x.Extra["rcvbuf_errors"]
		if sent := x.Extra["sent"]; ok && sent > 0 {
			host = append(host, 100*drops/sent)
		}
	}
	if len(host) > 0 {
		cell += " (" + medianCell(host, 1) + " %)"
	}
	return cell
}

// readyCell is a cell's time to ready in seconds.
func readyCell(s []results.Sample) string {
	return medianCell(values(s), 2)
}
