package report

import (
	"fmt"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// noiseMark follows a figure whose cell is marked: its runs met other work
// on the host, spread widely, or never reached --precision.
const noiseMark = "†"

// marked returns the marks of a cell's primary metric and its noise,
// which every metric of the instrument shares.
func (v *view) marked(transport, condition, instrument string) []string {
	if !v.twnsbench {
		return nil
	}
	for _, c := range v.doc.Cells {
		if c.Transport == transport && c.Condition == condition && c.Instrument == instrument && c.Metric == "value" {
			return c.Marks
		}
	}
	return nil
}

// mark appends the noise mark to a rendered figure of a marked cell.
func (v *view) mark(cell, transport, condition, instrument string) string {
	if cell == dash || len(v.marked(transport, condition, instrument)) == 0 {
		return cell
	}
	return cell + " " + noiseMark
}

// markWhy says what each mark means, with its threshold.
var markWhy = map[string]string{
	results.MarkBackground: fmt.Sprintf("other work on the host took at least %s %% of its CPU during a run (busy CPU outside this run's cgroups, the harness and kernel threads)", trimNum(results.NoisyBackgroundPct)),
	results.MarkSteal:      fmt.Sprintf("the hypervisor took at least %s %% of the host's CPU (steal) during a run", trimNum(results.NoisyStealPct)),
	results.MarkSpread:     fmt.Sprintf("the runs spread with a coefficient of variation of at least %s %%", trimNum(100*results.NoisyCV)),
	results.MarkPrecision:  "--runs auto: the median's 95 % interval is wider than the precision asked for, or some of the runs the cell's pilot planned failed (the valid ones cannot claim the precision alone)",
}

var markOrder = []string{results.MarkBackground, results.MarkSteal, results.MarkSpread, results.MarkPrecision}

// noiseCounts counts the marked primary cells, in total and per mark.
func noiseCounts(d *results.Document) (cells, marked int, per map[string]int) {
	per = map[string]int{}
	for _, c := range d.Cells {
		if c.Metric != "value" {
			continue
		}
		cells++
		if len(c.Marks) > 0 {
			marked++
		}
		for _, m := range c.Marks {
			per[m]++
		}
	}
	return cells, marked, per
}

// NoiseSummary is the run's one-line account of its marked cells, for the
// console; "" for a document without noise readings or marks.
func NoiseSummary(d *results.Document) string {
	cells, marked, per := noiseCounts(d)
	if cells == 0 {
		return ""
	}
	if marked == 0 {
		return fmt.Sprintf("noise: none of %d cells marked", cells)
	}
	return fmt.Sprintf("noise: %d of %d cells marked %s (%s; see the report's Noise section)", marked, cells, noiseMark, markBreakdown(per))
}

// markBreakdown is "3 background, 2 spread": the count of each mark, in
// markOrder.
func markBreakdown(per map[string]int) string {
	var parts []string
	for _, m := range markOrder {
		if per[m] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", per[m], m))
		}
	}
	return strings.Join(parts, ", ")
}

// writeNoise renders how much the host's other work and the runs' spread
// put the numbers in doubt: the thresholds, how many cells are marked and
// why, and each marked cell's readings.
func (v *view) writeNoise(w *writer) {
	if !v.twnsbench {
		return
	}
	cells, marked, per := noiseCounts(v.doc)
	if cells == 0 {
		return
	}
	w.block("## Noise")
	intro := "Each sample records the host's other work while it ran: busy CPU outside this run's cgroups, the harness and " +
		"kernel threads (another program's work; interrupt and softirq time, where the kernel moves this run's packets, is left out), " +
		"and steal time, both as shares of the host's CPU. A cell is marked " + noiseMark + " when:"
	var why []string
	for _, m := range markOrder {
		why = append(why, "- "+m+": "+markWhy[m])
	}
	w.block(intro)
	w.block(why...)
	if marked == 0 {
		w.block(fmt.Sprintf("None of the %d cells is marked.", cells))
		return
	}
	w.block(fmt.Sprintf("%d of %d cells are marked (%s).", marked, cells, markBreakdown(per)))
	lines := []string{tableRow("Condition", "Transport", "Instrument", "n", "CV", "Background CPU, most", "Steal, most", "Marks"), separatorRow(8)}
	for _, c := range v.doc.Cells {
		if c.Metric != "value" || len(c.Marks) == 0 {
			continue
		}
		n := fmt.Sprint(c.N)
		if c.Planned != nil && *c.Planned != c.N {
			n = fmt.Sprintf("%d of %d planned", c.N, *c.Planned)
		}
		lines = append(lines, tableRow(c.Condition, v.label(c.Transport), c.Instrument, n,
			optPct(c.CV, 100), optPct(c.BackgroundPctMax, 1), optPct(c.StealPctMax, 1), strings.Join(c.Marks, ", ")))
	}
	w.block(lines...)
}

// optPct renders a share as a percentage (scale 100 for a fraction, 1 for
// a value already in percent), or a dash when it was not measured.
func optPct(x *float64, scale float64) string {
	if x == nil {
		return dash
	}
	return num(*x*scale, 1) + " %"
}
