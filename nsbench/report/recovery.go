package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// precRecovery gives recovery seconds to the millisecond: the prober asks
// every 10 ms, and an answer's arrival is timed finer than that.
const precRecovery = 3

// recoveryKeys are the metrics the Recovery table shows, so More metrics
// leaves them out for a fault instrument.
var recoveryKeys = []string{"value", results.RecoveryLost, results.RecoveryDials, results.SessionSurvived,
	results.StreamResumed, results.StreamGapSec}

// faultInstruments are the fault instruments of d, in the samples'
// order: those whose samples carry the recovery figures
// (results.IsRecovery), whatever their names.
func faultInstruments(d *results.Document) []string {
	var out []string
	for _, s := range d.Samples {
		if results.IsRecovery(s) && !slices.Contains(out, s.Instrument) {
			out = append(out, s.Instrument)
		}
	}
	return out
}

// inRecoveryTable says whether the Recovery table shows instrument's
// metric key, faults being the document's fault instruments.
func inRecoveryTable(faults []string, instrument, key string) bool {
	return slices.Contains(recoveryKeys, key) && slices.Contains(faults, instrument)
}

// writeRecovery renders one row per condition × transport × fault
// instrument: the recovery's seconds with their interval, the requests
// lost, the connections the prober opened, and, as counts of the runs,
// the SSH sessions that survived and the streams that resumed. Only a run
// where a fault instrument ran has the section.
func writeRecovery(w *writer, v *view) {
	faults := faultInstruments(v.doc)
	if len(faults) == 0 {
		return
	}
	header := []string{"Condition", "Transport", "Fault", "Recovery (s)", "Requests lost", "Connections opened",
		"SSH session", "Stream resumed", "Stream without bytes (s)"}
	lines := []string{tableRow(header...), separatorRow(len(header))}
	var notes []string
	for _, c := range v.doc.Conditions {
		for _, t := range v.order {
			for _, in := range faults {
				ss := v.samples(t, c.Name, in)
				if len(ss) == 0 {
					continue
				}
				lines = append(lines, tableRow(recoveryRow(v, c.Name, t, in, ss)...))
				notes = append(notes, streamNotes(v.label(t), in, ss)...)
			}
		}
	}
	w.block("## Recovery")
	w.block("Per fault and transport, the seconds from the fault's end until a request through the tunnel (one every 10 ms) was answered again: " +
		"the median of the runs and, in brackets, its interval (`ci_low`–`ci_high` of the JSON's cells: 95 % from 6 runs; with fewer, " +
		"the min–max range at the level it reaches, given). ≥: a run whose tunnel was not back within the bound holds the bound, a lower bound, " +
		"never a number; every figure it reaches reads ≥, and the cell counts the runs not back. " +
		"Requests lost (from the fault's start until traffic crossed again; in a run not back, those of the bound's span, a lower bound) " +
		"and the connections the prober opened: the median of the runs (min–max). " +
		"SSH session: the runs whose session through the tunnel, opened before the fault, got every heartbeat with no new login. " +
		"Stream: the runs whose TCP stream through the tunnel, open before the fault, carried bytes again on the same connection, " +
		"and the seconds it carried none across the fault, the median (min–max). " +
		"JSON: each sample's `value` (`value_at_least`), `lost`, `dials`, `session_survived`, `stream_resumed` and `stream_gap_s` (`stream_gap_s_at_least`); " +
		"`cells` hold their medians and intervals.")
	w.block(lines...)
	if len(notes) > 0 {
		w.block(notes...)
	}
}

// recoveryRow is one fault's row: every cell from the samples alone.
func recoveryRow(v *view, condition, transport, instrument string, ss []results.Sample) []string {
	runs := v.fullRuns()
	return []string{
		condition, v.label(transport), codeSpan(instrument),
		recoveryCell(v.readings(ss, "value", ""), runs),
		boundRangeCell(lostReadings(v.doc, ss), 0, runs),
		rangeCell(extras(ss, results.RecoveryDials), 0, runs),
		countCell(ss, results.SessionSurvived, "survived"),
		countCell(ss, results.StreamResumed, "resumed"),
		boundRangeCell(v.readings(ss, results.StreamGapSec, ""), 2, runs),
	}
}

// recoveryCell is the recovery's median with its interval of the median
// (stats.MedianCI, as the JSON's cells hold it) and the interval's level;
// a figure a censored run reaches reads "≥", and the runs not back within
// the bound are counted: "0.052 (0.041–≥ 30.000, 75 %; 1 of 3 not back
// within 30 s)".
func recoveryCell(rs []results.Reading, runs int) string {
	if len(rs) == 0 {
		return dash
	}
	xs := results.ValuesOf(rs)
	med := stats.Median(xs)
	ci := stats.MedianCI(xs, 0.95)
	out := fmt.Sprintf("%s%s (%s%s–%s%s, %s %%", atLeastMark(results.MedianAtLeast(rs)), num(med, precRecovery),
		atLeastMark(results.OrderStatAtLeast(rs, ci.Low)), num(ci.Low, precRecovery),
		atLeastMark(results.OrderStatAtLeast(rs, ci.High)), num(ci.High, precRecovery), pct(ci.Level))
	if len(rs) != runs {
		out += fmt.Sprintf("; n=%d", len(rs))
	}
	if n := results.Censored(rs); n > 0 {
		bound := 0.0
		for _, r := range rs {
			if r.AtLeast {
				bound = max(bound, r.Value)
			}
		}
		out += fmt.Sprintf("; %d of %d not back within %s s", n, len(rs), num(bound, 0))
	}
	return out + ")"
}

// lostReadings are the runs' lost requests, each a lower bound where the
// recovery is (not back within the bound: the requests lost until traffic
// crossed again are at least those of the bound's span).
func lostReadings(d *results.Document, ss []results.Sample) []results.Reading {
	var rs []results.Reading
	for _, s := range ss {
		lost, ok := s.Extra[results.RecoveryLost]
		if !ok {
			continue
		}
		r, _ := d.ReadingOf(s, "value")
		rs = append(rs, results.Reading{Value: lost, AtLeast: r.AtLeast})
	}
	return rs
}

// countCell counts the samples whose key is 1 among those carrying it: "2
// of 3 survived"; a dash when none carries it (not measured).
func countCell(ss []results.Sample, key, verb string) string {
	yes, n := 0, 0
	for _, s := range ss {
		x, ok := s.Extra[key]
		if !ok {
			continue
		}
		n++
		if x == 1 {
			yes++
		}
	}
	if n == 0 {
		return dash
	}
	return fmt.Sprintf("%d of %d %s", yes, n, verb)
}

// streamNotes say, for a row whose runs did not all measure the stream,
// why not, in the words of those samples' method, once per reason with
// its runs.
func streamNotes(label, instrument string, ss []results.Sample) []string {
	var reasons []string
	runs := map[string][]string{}
	for _, s := range ss {
		if _, ok := s.Extra[results.StreamResumed]; ok || s.Method == "" {
			continue
		}
		why := strings.TrimSuffix(s.Method, ".")
		if _, seen := runs[why]; !seen {
			reasons = append(reasons, why)
		}
		runs[why] = append(runs[why], strconv.Itoa(s.Run))
	}
	out := make([]string, 0, len(reasons))
	for _, why := range reasons {
		word := "run"
		if len(runs[why]) > 1 {
			word = "runs"
		}
		out = append(out, fmt.Sprintf("- %s, %s, %s %s: %s.", mdText(label), codeSpan(instrument), word, joinAnd(runs[why]), mdText(why)))
	}
	return out
}
