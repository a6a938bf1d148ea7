package report

import (
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// skippedCell marks a skipped transport's row; the reason is said once, in
// the Skipped section (a reason is often a whole sentence with its fix).
const skippedCell = "skipped (reason under Skipped)"

// writeSkipped says once why each skipped transport did not run, under
// which condition.
func (v *view) writeSkipped(w *writer) {
	var lines []string
	for _, s := range v.doc.Skipped {
		if s.Instrument != "" {
			continue // one instrument that cannot measure: said beside its table
		}
		cond := s.Condition
		if cond == "" {
			cond = "every condition"
		}
		lines = append(lines, tableRow(v.label(s.Transport), cond, s.Reason))
	}
	if len(lines) == 0 {
		return
	}
	w.block("## Skipped")
	w.block(append([]string{tableRow("Transport", "Condition", "Reason"), separatorRow(3)}, lines...)...)
}

// writeFailures lists the samples that could not be measured, with the
// tool's own message: their cells show the other runs, or "—".
func (v *view) writeFailures(w *writer) {
	if len(v.doc.Failures) == 0 {
		return
	}
	w.block("## Failed samples")
	checked := false
	for _, f := range v.doc.Failures {
		checked = checked || len(f.Checks) > 0
	}
	if !checked {
		lines := []string{tableRow("Transport", "Condition", "Instrument", "Run", "Error"), separatorRow(5)}
		for _, f := range v.doc.Failures {
			lines = append(lines, tableRow(v.label(f.Transport), f.Condition, f.Instrument, strconv.Itoa(f.Run), f.Error))
		}
		w.block(lines...)
		return
	}
	w.block("After each failure the harness checked the parts the sample went through (the server's " +
		"services, the path, the WAN impairment), built again what did not answer, and went on; " +
		"\"lost\" is the time from the sample's start until it could.")
	lines := []string{tableRow("Transport", "Condition", "Instrument", "Run", "Error", "Checked", "Built again", "Lost"), separatorRow(8)}
	for _, f := range v.doc.Failures {
		repairs, lost := "nothing", "—"
		if len(f.Repairs) > 0 {
			repairs = strings.Join(f.Repairs, "; ")
		}
		if f.LostSec != nil {
			lost = strconv.FormatFloat(*f.LostSec, 'f', 1, 64) + " s"
		}
		lines = append(lines, tableRow(v.label(f.Transport), f.Condition, f.Instrument, strconv.Itoa(f.Run), f.Error,
			strings.Join(f.Checks, "; "), repairs, lost))
	}
	w.block(lines...)
}

// writeExcluded lists the samples measured but kept out of their cells
// and of the two-builds verdict (results.NotConverged: an rpm test
// that never converged), with why and the figure they would have given.
func writeExcluded(w *writer, d *results.Document, label func(string) string) {
	lines := []string{tableRow("Transport", "Condition", "Instrument", "Run", "Kept out", "Its figure"), separatorRow(6)}
	for _, s := range d.Samples {
		if s.Excluded() != "" {
			lines = append(lines, tableRow(label(s.Transport), s.Condition, s.Instrument, strconv.Itoa(s.Run), s.Excluded(),
				strconv.FormatFloat(s.Value, 'g', 4, 64)+" "+s.Unit))
		}
	}
	if len(lines) == 2 {
		return
	}
	w.block("## Samples kept out")
	w.block("Measured, kept in the results file, but in no cell and no verdict: \"not converged\" is an rpm test " +
		"whose responsiveness the draft's stopping rule never found stable before the time limit (`--duration`); " +
		"its figure is the last intervals' probes at the limit, not the draft's. A cell without runs shows \"—\".")
	w.block(lines...)
}

// excludedCount is how many of d's samples are kept out (Sample.Excluded).
func excludedCount(d *results.Document) int {
	n := 0
	for _, s := range d.Samples {
		if s.Excluded() != "" {
			n++
		}
	}
	return n
}

// writeBelowRate lists the fixed-rate samples (iperf3-cost) whose goodput
// fell short of the rate they offered: their cost per GB would be a cost
// at another load, so their cost cell has no reading of them
// (results.BelowOfferedRate); their goodput stays in its cell.
func writeBelowRate(w *writer, d *results.Document, label func(string) string) {
	lines := []string{tableRow("Transport", "Condition", "Instrument", "Run", "Offered", "Goodput"), separatorRow(6)}
	for _, s := range d.Samples {
		if _, below := s.Extra[results.BelowOfferedRate]; below {
			lines = append(lines, tableRow(label(s.Transport), s.Condition, s.Instrument, strconv.Itoa(s.Run),
				strconv.FormatFloat(s.Extra[results.OfferedGbps], 'g', 4, 64)+" Gbit/s", strconv.FormatFloat(s.Value, 'g', 4, 64)+" "+s.Unit))
		}
	}
	if len(lines) == 2 {
		return
	}
	w.block("## Below the offered rate")
	w.block("These fixed-rate samples carried less than 95 % of the rate they offered: the path could not keep up, " +
		"so their cost per GB is not the cost at that rate and their cost cell has no reading of them (a dash where none is left; " +
		"a verdict on fewer pairs). Their goodput stays in its cell: a build that cannot reach the rate reads slower there. " +
		"Offer a rate below what every row carries (`--cost-rate`).")
	w.block(lines...)
}

// belowRateCount is how many of d's samples fell short of their offered
// rate.
func belowRateCount(d *results.Document) int {
	n := 0
	for _, s := range d.Samples {
		if _, below := s.Extra[results.BelowOfferedRate]; below {
			n++
		}
	}
	return n
}
