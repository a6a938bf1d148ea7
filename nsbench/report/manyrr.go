package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

const instManyRR = "many_rr"

// manyRRQuantiles are the columns of the latency distribution: each a
// metric key of the many_rr sample and its header.
var manyRRQuantiles = []struct{ key, header string }{
	{"p50_us", "p50"}, {"p90_us", "p90"}, {"p99_us", "p99"}, {"p999_us", "p99.9"},
}

// writeManyRR renders, for one condition, the latency distribution of
// many_rr's transactions: p50, p90, p99 and p99.9 of one transaction over
// every connection (ms, the median of the runs), how far the tail lies
// from the median, and the slowest connection's rate beside the mean's.
// A transport skipped, or many_rr not measurable through it, shows its
// reason; a quantile a document does not hold is a dash.
func writeManyRR(v *view, w *writer, c results.Condition) {
	if !v.hasAny(c.Name, instManyRR) {
		return
	}
	label := c.Label
	if label == "" {
		label = c.Name
	}
	w.block("### Latency distribution, many connections at once (many_rr) — " + mdText(label))
	header := []string{"Transport", "Transactions/s (total)"}
	for _, q := range manyRRQuantiles {
		header = append(header, q.header+" (ms)")
	}
	header = append(header, "p99.9 / p50", "Per connection: mean / slowest (trans/s)")
	lines := []string{tableRow(header...), separatorRow(len(header))}
	var notes []string
	for _, t := range v.order {
		if _, ok := v.skipReason(t, c.Name); ok {
			lines = append(lines, tableRow(append([]string{v.label(t), skippedCell}, dashCells(len(header)-2)...)...))
			continue
		}
		ss := v.samples(t, c.Name, instManyRR)
		if reason, ok := v.instrumentSkip(t, c.Name, instManyRR); ok && len(ss) == 0 {
			notes = append(notes, fmt.Sprintf("%s: %s", mdText(v.label(t)), mdText(reason)))
		}
		lines = append(lines, tableRow(manyRRRow(v, t, c.Name, ss)...))
	}
	w.block(lines...)
	note := "One transaction (a 64-byte request and its 64-byte response) over all connections, each connection closed-loop; " +
		"each figure is the median of the runs. p99.9 / p50: how many times the median the slowest thousandth waits."
	if slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "≥") }) {
		note += " ≥: a transaction was still unanswered a while after the test's end (censored, a stalled connection): " +
			"its wait so far joins the latencies as a lower bound, and a figure it reaches is one too."
	}
	w.block(note)
	if len(notes) > 0 {
		w.block("— not measured: " + strings.Join(notes, "; ") + ".")
	}
}

// manyRRRow is one transport's cells. (Both are functions of the view,
// not its methods: view is at its method cap, see module_test.go.)
func manyRRRow(v *view, t, condition string, ss []results.Sample) []string {
	row := []string{v.label(t), v.mark(rangeCell(values(ss), 0, v.fullRuns()), t, condition, instManyRR)}
	ms, bound := map[string]float64{}, map[string]bool{}
	for _, q := range manyRRQuantiles {
		xs := metricValues(ss, q.key)
		if len(xs) == 0 {
			row = append(row, dash)
			continue
		}
		ms[q.key] = stats.Median(xs) / 1000
		bound[q.key] = results.MedianAtLeast(v.readings(ss, q.key, ""))
		row = append(row, atLeastMark(bound[q.key])+num(ms[q.key], 2))
	}
	tail := dash
	if p50, ok := ms["p50_us"]; ok && p50 > 0 && !bound["p50_us"] {
		if p999, ok := ms["p999_us"]; ok {
			tail = atLeastMark(bound["p999_us"]) + num(p999/p50, 1) + "×"
		}
	}
	conn := dash
	if mean, slow := extras(ss, "per_conn_tps"), extras(ss, "min_conn_tps"); len(mean) > 0 && len(slow) > 0 {
		conn = num(stats.Median(mean), 0) + " / " + num(stats.Median(slow), 0)
	}
	return append(row, tail, conn)
}

// dashCells are n dash cells.
func dashCells(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = dash
	}
	return out
}
