package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// inFixedTables are the declared metrics the reference's Results table and
// the Packet rate table already show; every other declared metric — a new
// instrument's included — is rendered by writeMoreMetrics.
var inFixedTables = map[[2]string]bool{
	{instIperf1, "value"}: true, {instIperf4, "value"}: true,
	{instTCPRR, "value"}: true, {instTCPRR, "p50_us"}: true, {instTCPRR, "p99_us"}: true,
	{instScp, "value"}:  true,
	{instPing, "value"}: true, {instPing, "min_ms"}: true,
	{instUDP, "value"}: true, {instUDP, "loss_pct"}: true, {instUDP, "rcvbuf_errors"}: true,
	{instReady, "value"}: true,
	// the tunnel comparison
	{instIperf1, results.HostCPUPerGB}: true, {instIperf1, results.TransportCPUPerGB}: true,
}

// writeMoreMetrics renders, per condition, every declared metric that no
// fixed table shows: median (min–max) with its unit and which way is
// better. Documents without declarations get no section.
func (v *view) writeMoreMetrics(w *writer) {
	if len(v.doc.Instruments) == 0 {
		return
	}
	order, values := v.doc.MetricValues()
	lines := []string{tableRow("Condition", "Transport", "Instrument", "Metric", "Median (min–max)", "Better"), separatorRow(6)}
	rows := 0
	faults := faultInstruments(v.doc)
	for _, c := range v.doc.Conditions {
		for _, k := range order {
			// rrul has its own tables, one per probe (writeRRUL), and a
			// fault's recovery figures have theirs (writeRecovery).
			if k.Condition != c.Name || k.Instrument == instRRUL || inFixedTables[[2]string{k.Instrument, k.Metric}] ||
				inRecoveryTable(faults, k.Instrument, k.Metric) {
				continue
			}
			m, _ := v.doc.MetricOf(k.Instrument, k.Metric)
			if m.At > 0 { // a sweep's point: in its own table (writeSweeps)
				continue
			}
			label := m.Label
			if label == "" {
				label = k.Metric
			}
			if m.Unit != "" {
				label += " (" + m.Unit + ")"
			}
			lines = append(lines, tableRow(c.Name, v.label(k.Transport), k.Instrument, label,
				rangeCell(values[k], autoPrec(values[k]), v.fullRuns()), dashIfEmpty(m.Better)))
			rows++
		}
		for _, sk := range v.doc.Skipped {
			if sk.Instrument != "" && (sk.Condition == "" || sk.Condition == c.Name) && onlyMoreMetrics(v.doc, sk.Instrument) {
				lines = append(lines, tableRow(c.Name, v.label(sk.Transport), sk.Instrument, "every metric", "— ("+sk.Reason+")", ""))
				rows++
			}
		}
	}
	if rows == 0 {
		return
	}
	w.block("## More metrics")
	w.block("Every other metric the instruments declared, per cell: the median of the runs with (min–max).")
	w.block(lines...)
	if methods := v.methods(); len(methods) > 0 {
		w.block(methods...)
	}
}

// onlyMoreMetrics reports whether every metric instrument declares in doc is
// shown here, under More metrics, so that a path it could not measure is
// said here too (the fixed tables say theirs beside them).
func onlyMoreMetrics(doc *results.Document, instrument string) bool {
	for _, in := range doc.Instruments {
		if in.Name != instrument {
			continue
		}
		for _, m := range in.Metrics {
			if in.Name == instRRUL || inFixedTables[[2]string{in.Name, m.Key}] || m.At > 0 {
				return false
			}
		}
		return len(in.Metrics) > 0
	}
	return false
}

// methods names, per instrument that chose how to measure by path, each way
// it measured and the transports measured that way.
func (v *view) methods() []string {
	type key struct{ instrument, method string }
	var order []key
	transports := map[key][]string{}
	for _, s := range v.doc.Samples {
		// A fault instrument's method is said under Recovery.
		if s.Method == "" || results.IsRecovery(s) {
			continue
		}
		k := key{s.Instrument, s.Method}
		if _, seen := transports[k]; !seen {
			order = append(order, k)
		}
		if label := mdText(v.label(s.Transport)); !slices.Contains(transports[k], label) {
			transports[k] = append(transports[k], label)
		}
	}
	var lines []string
	for _, k := range order {
		lines = append(lines, fmt.Sprintf("- %s on %s: %s.", mdText(k.instrument), strings.Join(transports[k], ", "), mdText(k.method)))
	}
	return lines
}

// autoPrec gives a declared metric, whose magnitude the report does not
// know in advance, three significant digits at the median.
func autoPrec(xs []float64) int {
	m := math.Abs(stats.Summarize(xs).Median)
	switch {
	case m == 0 || m >= 100:
		return 0
	case m >= 10:
		return 1
	case m >= 1:
		return 2
	}
	return min(6, 2-int(math.Floor(math.Log10(m))))
}
