package report

import (
	"fmt"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

const instRRUL = "rrul"

// The latency probes rrul measures with: an ICMP echo's round trip and a
// netperf TCP_RR transaction's are different measures (the transaction
// adds both ends' TCP stacks and netserver), so they never share a column.
const (
	probeICMP  = "ICMP"
	probeTCPRR = "TCP_RR"
)

// probeOf names a sample's headline probe from its method ("latency by
// ICMP echo …", "latency by netperf TCP_RR …"; a flow beside it is named
// after it: see probeOfKey).
func probeOf(s results.Sample) string {
	if strings.HasPrefix(s.Method, "latency by netperf TCP_RR") {
		return probeTCPRR
	}
	return probeICMP
}

// probeOfKey names the probe behind a metric or series key of s: the
// TCP_RR flow beside ICMP has keys of its own (results.TCPRRFlow); every
// other key is the headline probe's.
func probeOfKey(s results.Sample, key string) string {
	if strings.HasPrefix(key, results.TCPRRFlow) {
		return probeTCPRR
	}
	return probeOf(s)
}

// bufferbloatGrade applies DSLReports' bufferbloat thresholds to an added
// latency under load, in ms. DSLReports grades another statistic (the
// mean increase, averaged over a download-only and an upload-only phase);
// rrul's is the median of the runs' p50 increase under two-way load, and
// the report says so (gradeNote).
func bufferbloatGrade(ms float64) string {
	switch {
	case ms < 5:
		return "A+"
	case ms < 30:
		return "A"
	case ms < 60:
		return "B"
	case ms < 200:
		return "C"
	case ms < 400:
		return "D"
	}
	return "F"
}

// gradeNote says what the Grade column grades, and that it is not
// DSLReports' own grade.
const gradeNote = "Grade: DSLReports' bufferbloat thresholds (A+ < 5 ms, A < 30, B < 60, C < 200, D < 400, F ≥ 400) " +
	"applied to the added latency above, the median of the runs' p50 increase under two-way load. " +
	"It is not DSLReports' grade, which takes the mean increase averaged over a download-only and an upload-only phase " +
	"(this test loads both ways at once), so it only places the figure on their scale."

// writeRRUL renders, per condition and per probe, latency under load: idle
// and loaded quantiles, the probes left unanswered, the added latency and
// its grade, and the load's throughput. Each table holds one probe's rows.
func (v *view) writeRRUL(w *writer, c results.Condition) {
	byProbe := map[string][]string{}
	for _, t := range v.order {
		for _, s := range v.samples(t, c.Name, instRRUL) {
			p := probeOf(s)
			if len(byProbe[p]) == 0 || byProbe[p][len(byProbe[p])-1] != t {
				byProbe[p] = append(byProbe[p], t)
			}
		}
	}
	if len(byProbe) == 0 {
		return
	}
	label := c.Label
	if label == "" {
		label = c.Name
	}
	w.block("### Latency under load (RRUL) — " + label)
	w.block("Latency probed alone, then under `iperf3 --bidir -P 4`; added latency = loaded p50 − idle p50, the median of the runs. " +
		gradeNote + " " +
		"≥: a probe was still unanswered when it stopped (censored): its wait joins the readings as a lower bound, and a figure it reaches is one too.")
	for _, p := range []string{probeICMP, probeTCPRR} {
		ts := byProbe[p]
		if len(ts) == 0 {
			continue
		}
		header := []string{"Transport (probe: " + p + ")", "Idle p50 (ms)", "Loaded p50 / p90 / p99 (ms)",
			"Unanswered under load", "Added latency (ms)", "Grade (DSLReports' thresholds)", "Down / up under load (Gbit/s)"}
		lines := []string{tableRow(header...), separatorRow(len(header))}
		method := ""
		for _, t := range ts {
			var ss []results.Sample
			for _, s := range v.samples(t, c.Name, instRRUL) {
				if probeOf(s) == p {
					ss = append(ss, s)
					method = s.Method
				}
			}
			lines = append(lines, tableRow(v.rrulRow(v.label(t), ss)...))
		}
		w.block(lines...)
		if method != "" {
			w.block("probe: " + p + " — " + method + ".")
		}
	}
}

// rrulRow is one transport's cells. A figure that is a lower bound reads
// "≥": the median of runs one of which is censored at or below it (a
// censored reading above the median cannot move it).
func (v *view) rrulRow(label string, ss []results.Sample) []string {
	bound := func(key string) string { return atLeastMark(results.MedianAtLeast(v.readings(ss, key, ""))) }
	med := func(key string) (float64, bool) {
		s := stats.Summarize(extras(ss, key))
		return s.Median, s.N > 0
	}
	cell := func(key string, prec int) string {
		if m, ok := med(key); ok {
			return num(m, prec)
		}
		return dash
	}
	loaded := dash
	if _, ok := med("loaded_p50_ms"); ok {
		loaded = bound("loaded_p50_ms") + cell("loaded_p50_ms", 2) + " / " + bound("loaded_p90_ms") + cell("loaded_p90_ms", 2) +
			" / " + bound("loaded_p99_ms") + cell("loaded_p99_ms", 2)
	}
	var values []float64
	for _, s := range ss {
		values = append(values, s.Value)
	}
	added, grade := dash, dash
	if a := stats.Summarize(values); a.N > 0 {
		added = bound("value") + rangeCell(values, 2, v.doc.Env.Runs)
		grade = bufferbloatGrade(a.Median)
		if bound("value") != "" && grade != "F" {
			grade += " or worse"
		}
	}
	return []string{label, cell("idle_p50_ms", 2), loaded, unansweredCell(ss), added, grade,
		cell("down_gbps", 2) + " / " + cell("up_gbps", 2)}
}

// unansweredCell sums the runs' unanswered probes against those sent in
// the test, with the longest censored wait; a dash for documents from
// before the count.
func unansweredCell(ss []results.Sample) string {
	var sent, unanswered, wait float64
	counted := false
	for _, s := range ss {
		u, ok := s.Extra["probe_unanswered"]
		if !ok {
			continue
		}
		counted = true
		unanswered += u
		sent += s.Extra["probe_sent"]
		wait = max(wait, s.Extra["censored_wait_ms"])
	}
	if !counted {
		return dash
	}
	out := fmt.Sprintf("%.0f of %.0f", unanswered, sent)
	if sent > 0 && unanswered > 0 {
		out += fmt.Sprintf(" (%s %%)", num(100*unanswered/sent, 1))
	}
	if wait > 0 {
		out += fmt.Sprintf(", censored: waited %s s", num(wait/1000, 1))
	}
	return out
}
