package report

import "strconv"

// writeFailures lists the samples that could not be measured, with the
// tool's own message: their cells show the other runs, or "—".
func (v *view) writeFailures(w *writer) {
	if len(v.doc.Failures) == 0 {
		return
	}
	w.block("## Failed samples")
	lines := []string{tableRow("Transport", "Condition", "Instrument", "Run", "Error"), separatorRow(5)}
	for _, f := range v.doc.Failures {
		lines = append(lines, tableRow(v.label(f.Transport), f.Condition, f.Instrument, strconv.Itoa(f.Run), f.Error))
	}
	w.block(lines...)
}
