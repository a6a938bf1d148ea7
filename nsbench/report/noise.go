package report

import (
	"fmt"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// noiseMark follows a figure whose cell is marked: its runs met other work
// on the host, spread widely, never reached --precision, or hold lower
// bounds that leave the precision unknown (censored).
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
	results.MarkBackground: fmt.Sprintf("other work on the host took at least %s %% of its CPU during a run (CPU of processes outside this run's cgroups, the harness and kernel threads)", trimNum(results.NoisyBackgroundPct)),
	results.MarkSteal:      fmt.Sprintf("the hypervisor took at least %s %% of the host's CPU (steal) during a run", trimNum(results.NoisyStealPct)),
	results.MarkSpread:     fmt.Sprintf("the runs spread with a coefficient of variation of at least %s %% (a difference, rrul's latency increase, whose mean can be 0, has none)", trimNum(100*results.NoisyCV)),
	results.MarkPrecision:  "--runs auto: the median's 95 % interval is wider than the precision asked for, or some of the runs the cell's pilot planned failed (the valid ones cannot claim the precision alone)",
	results.MarkCensored:   "--runs auto: a run's reading is a lower bound (≥, a probe outlasted its test) at or below an end of the median's 95 % interval, so the interval is unbounded above and the precision is neither reached nor missed; a pilot holding such a reading planned --max-runs",
}

var markOrder = []string{results.MarkBackground, results.MarkSteal, results.MarkSpread, results.MarkCensored, results.MarkPrecision}

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
func writeNoise(w *writer, v *view) {
	if !v.twnsbench {
		return
	}
	cells, marked, per := noiseCounts(v.doc)
	if cells == 0 {
		return
	}
	w.block("## Noise")
	intro := "Each sample records the host's other work while it ran: the CPU that processes outside this run's cgroups " +
		"ran, the harness and kernel threads aside (each process's own and its reaped children's, by the scheduler's clock, " +
		"followed across the two readings; it cannot see kernel threads — kernel WireGuard's and IPsec's crypto workers —, " +
		"interrupt work done in no process, processes of a PID namespace this one's /proc does not show, nor what a process " +
		"ran before a reaper that counts nothing took it: a parent ignoring SIGCHLD, the harness, the run), and steal time, " +
		"both as shares of the host's CPU. " +
		"A cell is marked " + noiseMark + " when:"
	var why []string
	for _, m := range markOrder {
		why = append(why, "- "+m+": "+markWhy[m])
	}
	w.block(intro)
	if n := machineCount(v.doc); n > 0 {
		w.block(fmt.Sprintf("This run's roles stood on %s: the run's agent on each reads that machine's other work "+
			"(itself and the run's cgroups aside), and the shares are of the machines' CPUs together "+
			"(each machine's own is in results.json, noise.machines).", plural(n, "machine", "machines")))
	}
	w.block(why...)
	if host := hostCPUNote(v.doc); host != "" {
		w.block(host)
	}
	if below := belowZeroNote(v.doc); below != "" {
		w.block(below)
	}
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
			optPct(c.CV, 100), backgroundCell(c.BackgroundPctMax), optPct(c.StealPctMax, 1), strings.Join(c.Marks, ", ")))
	}
	w.block(lines...)
}

// backgroundCell renders a background share, saying so when the estimate
// came out below zero.
func backgroundCell(x *float64) string {
	if x != nil && *x < 0 {
		return optPct(x, 1) + " (below zero: estimate)"
	}
	return optPct(x, 1)
}

// hostCPUNote sets the host's busy CPU over the metered samples beside
// the steal meanwhile, a figure of its own: time a hypervisor gave other
// guests is no work of this run. "" for documents that did not record
// steal apart (before steal_cpu_sec, host_cpu_sec included it).
func hostCPUNote(d *results.Document) string {
	var n int
	var busy, steal, window float64
	for _, s := range d.Samples {
		if s.Noise == nil || s.Noise.StealCPUSec == nil {
			continue
		}
		n++
		busy += s.HostCPUSec
		steal += *s.Noise.StealCPUSec
		window += s.Noise.WindowSec
	}
	cores := runCores(d)
	if n == 0 || window <= 0 || cores <= 0 {
		return ""
	}
	capacity := window * float64(cores)
	return fmt.Sprintf("Host CPU over the %s metered (%s s): busy %s CPU-s (%s %% of %s online), "+
		"steal %s CPU-s (%s %%), counted apart: time the hypervisor gave other guests is no work of this run and is in "+
		"no busy figure (host CPU-s, CPU-s per GB, Gbit/s per busy core).",
		plural(n, "sample", "samples"), num(window, 1), num(busy, 1), num(100*busy/capacity, 1),
		plural(cores, "CPU", "CPUs"), num(steal, 2), num(100*steal/capacity, 1))
}

// belowZeroNote says how many samples' background estimate came out below
// zero, and why that is not negative work; "" when none did.
func belowZeroNote(d *results.Document) string {
	n, total, lowest := 0, 0, 0.0
	for _, s := range d.Samples {
		if s.Noise == nil {
			continue
		}
		total++
		if s.Noise.BackgroundPct < 0 {
			n++
			lowest = min(lowest, s.Noise.BackgroundPct)
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d samples' background estimate came out below zero (lowest %s %%): this document's "+
		"estimate summed other processes' CPU, and a process reaped by no counted process (a parent ignoring SIGCHLD, "+
		"the harness, the run) took its whole CPU since it started out of the sum, so it could fall below zero by "+
		"that process's lifetime CPU. It is shown as it came out, not as 0: below zero means other work within that "+
		"much. An estimate that follows each process across the readings is never below zero.", n, total, num(lowest, 1))
}

// optPct renders a share as a percentage (scale 100 for a fraction, 1 for
// a value already in percent), or a dash when it was not measured.
func optPct(x *float64, scale float64) string {
	if x == nil {
		return dash
	}
	return num(*x*scale, 1) + " %"
}

// machineCount is how many machines a run across hosts stood on (0 on
// one host).
func machineCount(d *results.Document) int {
	seen := map[string]bool{}
	for _, h := range d.Env.HostsAcross() {
		seen[h.Login] = true
	}
	return len(seen)
}

// runCores is the CPUs the host figures are shares of: this host's
// online, or across hosts the machines' together (0, unknown, when a
// machine's count was not read).
func runCores(d *results.Document) int {
	if !d.Env.AcrossHosts() {
		if on := d.Env.CPUsOnline; on != nil {
			return on.Count
		}
		return d.Env.Cores
	}
	cores, seen := 0, map[string]bool{}
	for _, h := range d.Env.Hosts {
		if seen[h.Login] {
			continue
		}
		seen[h.Login] = true
		if h.Cores <= 0 {
			return 0
		}
		cores += h.Cores
	}
	return cores
}
