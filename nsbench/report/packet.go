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
func (v *view) writePacketTable(w *writer, c results.Condition) {
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
		lines = append(lines, tableRow(v.label(t), v.mark(v.pingCell(t, c.Name), t, c.Name, instPing),
			v.mark(v.kppsCell(t, c.Name), t, c.Name, instUDP), v.udpLossCell(t, c.Name), v.readyCell(t, c.Name)))
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

func (v *view) pingCell(t, cond string) string {
	s := v.samples(t, cond, instPing)
	if len(s) == 0 {
		return dash
	}
	return medianCell(values(s), 2) + " / " + medianCell(extras(s, "min_ms"), 2)
}

func (v *view) kppsCell(t, cond string) string {
	s := v.samples(t, cond, instUDP)
	kpps := make([]float64, len(s))
	for i, x := range s {
		kpps[i] = x.Value / 1000
	}
	return rangeCell(kpps, 1, v.fullRuns())
}

// udpLossCell shows the share of datagrams that never arrived and, in
// brackets, the share the client's own socket buffer dropped: loss that is
// the host's, not the network's.
func (v *view) udpLossCell(t, cond string) string {
	s := v.samples(t, cond, instUDP)
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

func (v *view) readyCell(t, cond string) string {
	return medianCell(values(v.samples(t, cond, instReady)), 2)
}
