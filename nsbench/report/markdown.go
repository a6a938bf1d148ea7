// Package report renders a results document as a Markdown report with the
// reference harness's layout and precision. It reads only the document:
// the same document always gives the same bytes.
package report

import (
	"bytes"
	"fmt"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// Markdown renders d. It is deterministic: no clock, no map-order
// dependence; the generation time shown is d.Env.Generated.
func Markdown(d *results.Document) []byte {
	if d == nil {
		return nil
	}
	v := newView(d)
	w := &writer{}
	v.writeHeader(w)
	v.writeEnvironment(w)
	v.writeBuilds(w)
	for _, c := range d.Conditions {
		v.writeResults(w, c)
		writePacketTable(w, v, c)
		v.writeRRUL(w, c)
		writeManyRR(v, w, c)
		writeSweeps(w, v, c)
	}
	writeTunnels(w, v)
	writeRecovery(w, v)
	v.writeMoreMetrics(w)
	writeNoise(w, v)
	v.writeSkipped(w)
	v.writeFailures(w)
	writeExcluded(w, d, v.label)
	writeBelowRate(w, d, v.label)
	v.writeVerification(w)
	writeNarrowPath(w, d, v.label)
	v.writeMemory(w)
	v.writeDiagnostics(w)
	v.writeTimings(w)
	v.writeReading(w)
	return w.buf.Bytes()
}

// writer puts Markdown blocks one blank line apart.
type writer struct{ buf bytes.Buffer }

func (w *writer) block(lines ...string) {
	if w.buf.Len() > 0 {
		w.buf.WriteByte('\n')
	}
	for _, l := range lines {
		w.buf.WriteString(l)
		w.buf.WriteByte('\n')
	}
}

func (v *view) writeHeader(w *writer) {
	w.block("# " + v.title())
	generated := v.doc.Env.Generated
	if generated == "" {
		generated = dash
	}
	w.block("Generated: " + generated)
	switch {
	case v.doc.Interrupted != "":
		w.block("**Interrupted:** " + mdText(v.doc.Interrupted) + " — the tables show the samples measured before it.")
	case !v.doc.IsComplete():
		w.block("**Incomplete:** " + mdText(v.doc.IncompleteReason()) + " — the tables show the samples measured before it stopped.")
	}
	w.block(v.intro())
	if v.twnsbench {
		// Written beside the report by the run and by `twnsbench report`.
		if figures[0].has(v) {
			w.block("![benchmark chart](" + ChartFile + ")")
		}
		w.block(v.figureLinks())
	}
}

func (v *view) writeEnvironment(w *writer) {
	w.block("## Environment")
	lines := []string{"| Item | Value |", "|------|-------|"}
	for _, r := range v.envRows() {
		lines = append(lines, tableRow(r.item, r.value))
	}
	w.block(lines...)
	v.writeHosts(w)
}

func (v *view) writeResults(w *writer, c results.Condition) {
	label := c.Label
	if label == "" {
		label = c.Name
	}
	w.block("## Results — " + mdText(label))
	header := resultsHeader(c.ScpPayloadBytes)
	lines := []string{tableRow(header...), separatorRow(len(header))}
	flagged, noisy := false, false
	for _, t := range v.order {
		row := v.resultsRow(t, c.Name)
		for i, in := range resultsInstruments {
			if in != "" && row[i] != skippedCell {
				marked := v.mark(row[i], t, c.Name, in)
				noisy = noisy || marked != row[i]
				row[i] = marked
			}
		}
		if v.unverified(t, c.Name) {
			row[0] += " " + flagMark
			flagged = true
		}
		lines = append(lines, tableRow(row...))
	}
	w.block(lines...)
	if why := notInResults(v, c.Name); why != "" {
		w.block(why)
	}
	if flagged {
		w.block(verificationFootnote())
	}
	if noisy {
		w.block(noiseMark + " Marked: the runs met other work on the host, spread widely, missed the precision asked for, or hold lower bounds that leave it unknown: see Noise.")
	}
}

func (v *view) writeDiagnostics(w *writer) {
	if len(v.doc.Diagnostics) == 0 {
		return
	}
	w.block("## Diagnostics")
	w.block(v.diagnosticsNote())
	for _, d := range v.doc.Diagnostics {
		w.block(fmt.Sprintf("### %s / %s — %s", mdText(d.Transport), mdText(d.Condition), mdText(d.Name)))
		out := trimTrailingNewlines(d.Output)
		f := fence(out)
		w.block(f, out, f)
	}
}

func trimTrailingNewlines(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}

// writeTimings shows the harness's own costs; sub-second steps get three
// decimals, whole-run figures two.
func (v *view) writeTimings(w *writer) {
	t := v.doc.Timings
	if t == nil {
		return
	}
	w.block("## Timings")
	lines := []string{"| Step | Time |", separatorRow(2),
		tableRow("Topology up", num(t.TopologyUpSec, 3)+" s"),
		tableRow("Teardown", num(t.TeardownSec, 3)+" s"),
	}
	if t.TotalSec > 0 {
		lines = append(lines, tableRow("Total", num(t.TotalSec, 2)+" s"))
	}
	if t.HarnessCPUSec > 0 {
		lines = append(lines, tableRow("Harness CPU", num(t.HarnessCPUSec, 2)+" CPU-s"))
	}
	w.block(lines...)
}

func (v *view) writeReading(w *writer) {
	w.block("## Reading the numbers")
	var lines []string
	for _, b := range v.readingBullets() {
		lines = append(lines, "- "+b)
	}
	w.block(lines...)
}

// notInResults says why the Results table of condition is all dashes when
// the run measured there, but none of that table's instruments (e.g.
// `--instruments app`); otherwise "".
func notInResults(v *view, condition string) string {
	if v.hasAny(condition, instIperf1, instIperf4, instTCPRR, instScp) {
		return ""
	}
	for _, s := range v.doc.Samples {
		if s.Condition == condition {
			return "— not measured in this run: none of this table's instruments (iperf3, TCP_RR, scp) was asked for; " +
				"the figures of those that were are in the tables below and under More metrics."
		}
	}
	return ""
}
