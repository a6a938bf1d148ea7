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
	if s.Instrument == instRRUL && strings.HasPrefix(key, results.TCPRRFlow) {
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

// rrulFlow is one table row's source: a transport's samples and the key
// prefix of the flow it reads ("" for the headline one, results.TCPRRFlow
// for TCP_RR beside ICMP).
type rrulFlow struct {
	transport, prefix string
	samples           []results.Sample
}

// besideICMP labels a row of the TCP_RR flow probed beside ICMP.
const besideICMP = "TCP_RR beside ICMP"

// rrulFlows are condition's rrul rows per probe, in transport order: each
// transport's headline flow under its probe, and its TCP_RR flow beside
// ICMP, where it has one, under TCP_RR.
func (v *view) rrulFlows(condition string) map[string][]rrulFlow {
	out := map[string][]rrulFlow{}
	for _, t := range v.order {
		by := map[string][]results.Sample{}
		var beside []results.Sample
		for _, s := range v.samples(t, condition, instRRUL) {
			by[probeOf(s)] = append(by[probeOf(s)], s)
			if _, ok := s.Extra[results.TCPRRFlow+"value"]; ok {
				beside = append(beside, s)
			}
		}
		for _, p := range []string{probeICMP, probeTCPRR} {
			if len(by[p]) > 0 {
				out[p] = append(out[p], rrulFlow{transport: t, samples: by[p]})
			}
		}
		if len(beside) > 0 {
			out[probeTCPRR] = append(out[probeTCPRR], rrulFlow{transport: t, prefix: results.TCPRRFlow, samples: beside})
		}
	}
	return out
}

// writeRRUL renders, per condition and per probe, latency under load: idle
// and loaded quantiles, the probes left unanswered, the added latency and
// its grade, and the load's throughput. Each table holds one probe's rows:
// a transport probed by ICMP and TCP_RR at once has a row in each.
func (v *view) writeRRUL(w *writer, c results.Condition) {
	byProbe := v.rrulFlows(c.Name)
	if len(byProbe) == 0 {
		return
	}
	label := c.Label
	if label == "" {
		label = c.Name
	}
	w.block("### Latency under load (RRUL) — " + mdText(label))
	w.block("Latency probed alone, then under `iperf3 --bidir -P 4`; added latency = loaded p50 − idle p50, the median of the runs. " +
		gradeNote + " " +
		"≥: a probe was still unanswered when it stopped (censored): its wait joins the readings as a lower bound, and a figure it reaches is one too. " +
		"A ping unanswered while a later one was answered is lost, not waiting (the path answers in order): it counts in the loss alone, never in the latency figures.")
	for _, p := range []string{probeICMP, probeTCPRR} {
		flows := byProbe[p]
		if len(flows) == 0 {
			continue
		}
		header := []string{"Transport (probe: " + p + ")", "Idle p50 (ms)", "Loaded p50 / p90 / p99 (ms)",
			"Unanswered under load", "Added latency (ms)", "Grade (DSLReports' thresholds)", "Down / up under load (Gbit/s)"}
		lines := []string{tableRow(header...), separatorRow(len(header))}
		method, beside := "", false
		for _, f := range flows {
			label := v.label(f.transport)
			if f.prefix != "" {
				label, beside = label+" ("+besideICMP+")", true
			} else {
				method = f.samples[len(f.samples)-1].Method
			}
			lines = append(lines, tableRow(v.rrulRow(label, f.samples, f.prefix)...))
		}
		w.block(lines...)
		if method != "" {
			w.block("probe: " + p + " — " + mdText(method) + ".")
		}
		if beside {
			w.block(besideICMP + ": TCP_RR probed at the same time as the ICMP flow, through the same path and load " +
				"(netperf TCP_RR, each 100 ms interval's mean round trip); its own idle and loaded figures, never pooled with the ICMP ones.")
		}
	}
}

// rrulRow is one flow's cells (prefix: its keys'). A figure that is a
// lower bound reads "≥": the median of runs one of which is censored at
// or below it (a censored reading above the median cannot move it).
func (v *view) rrulRow(label string, ss []results.Sample, prefix string) []string {
	bound := func(key string) string {
		return atLeastMark(results.MedianAtLeast(v.readings(ss, prefix+key, "")))
	}
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
	if _, ok := med(prefix + "loaded_p50_ms"); ok {
		loaded = bound("loaded_p50_ms") + cell(prefix+"loaded_p50_ms", 2) + " / " + bound("loaded_p90_ms") + cell(prefix+"loaded_p90_ms", 2) +
			" / " + bound("loaded_p99_ms") + cell(prefix+"loaded_p99_ms", 2)
	}
	// The cell's n is checked against the runs its cell planned (--runs
	// auto plans each cell's own), not the document's.
	added, grade := dash, dash
	if rs := v.readings(ss, prefix+"value", ""); len(rs) > 0 {
		added = boundRangeCell(rs, 2, v.doc.PlannedRuns(ss[0].Transport, ss[0].Condition, ss[0].Instrument))
		grade = bufferbloatGrade(stats.Summarize(results.ValuesOf(rs)).Median)
		if bound("value") != "" && grade != "F" {
			grade += " or worse"
		}
	}
	return []string{label, cell(prefix+"idle_p50_ms", 2), loaded, unansweredCell(ss, prefix), added, grade,
		cell("down_gbps", 2) + " / " + cell("up_gbps", 2)}
}

// unansweredCell sums the runs' unanswered probes of a flow (prefix: its
// keys') against those sent in the test, with the longest censored wait;
// a dash for documents from before the count. Where the samples count
// their lost probes apart (probe_lost: unanswered while a later one was
// answered), the cell says how many were lost and how many were still
// waiting at the end (censored), for only those are in the latency
// figures.
func unansweredCell(ss []results.Sample, prefix string) string {
	var sent, unanswered, lost, wait float64
	counted, split := false, false
	for _, s := range ss {
		u, ok := s.Extra[prefix+"probe_unanswered"]
		if !ok {
			continue
		}
		counted = true
		unanswered += u
		sent += s.Extra[prefix+"probe_sent"]
		wait = max(wait, s.Extra[prefix+results.CensoredWaitMs])
		if l, ok := s.Extra[prefix+"probe_lost"]; ok {
			lost, split = lost+l, true
		}
	}
	if !counted {
		return dash
	}
	out := fmt.Sprintf("%.0f of %.0f", unanswered, sent)
	if split {
		var parts []string
		if lost > 0 {
			parts = append(parts, fmt.Sprintf("%.0f lost (%s %%)", lost, num(100*lost/sent, 1)))
		}
		if waiting := unanswered - lost; waiting > 0 {
			parts = append(parts, fmt.Sprintf("%.0f still waiting at the end, censored: waited %s s", waiting, num(wait/1000, 1)))
		}
		if len(parts) > 0 {
			out += ": " + strings.Join(parts, "; ")
		}
		return out
	}
	if sent > 0 && unanswered > 0 {
		out += fmt.Sprintf(" (%s %%)", num(100*unanswered/sent, 1))
	}
	if wait > 0 {
		out += fmt.Sprintf(", censored: waited %s s", num(wait/1000, 1))
	}
	return out
}
