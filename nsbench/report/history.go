package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// HistoryFile is the trend report's name inside an output directory.
const HistoryFile = "bench-history.md"

// HistoryRuns is how many of the newest runs of one environment the trend
// report shows.
const HistoryRuns = 20

// historyRun is one run of a history: its lines share a time and a
// fingerprint.
type historyRun struct {
	time, fingerprint, settings string
	env                         results.FingerprintEnv
	cells                       map[string]results.HistoryLine // by series
}

// historyRuns groups lines into runs, oldest first (by time, then
// fingerprint: deterministic whatever the files' order). A run's lines
// share a time and a fingerprint; a cell that comes again under both
// starts another run (two runs that began in the same second).
func historyRuns(lines []results.HistoryLine) []*historyRun {
	byKey := map[[2]string]*historyRun{}
	var runs []*historyRun
	for _, l := range lines {
		k := [2]string{l.Time, l.Fingerprint}
		r, ok := byKey[k]
		if ok {
			if _, again := r.cells[trendKey(l)]; again { // another run in the same second
				ok = false
			}
		}
		if !ok {
			r = &historyRun{time: l.Time, fingerprint: l.Fingerprint, settings: l.Settings, env: l.Env, cells: map[string]results.HistoryLine{}}
			byKey[k] = r
			runs = append(runs, r)
		}
		r.cells[trendKey(l)] = l
	}
	sort.SliceStable(runs, func(i, j int) bool {
		if runs[i].time != runs[j].time {
			return runs[i].time < runs[j].time
		}
		return runs[i].fingerprint < runs[j].fingerprint
	})
	return runs
}

// trendKey identifies a trend: a series under one set of run settings
// (a run with another --duration or --size starts a trend of its own).
func trendKey(l results.HistoryLine) string { return l.Series() + "\x00" + l.Settings }

// seriesTitle is a trend's name in the table: the series, and its settings
// when they are not the newest run's.
func seriesTitle(key, newestSettings string) string {
	series, settings, _ := strings.Cut(key, "\x00")
	if settings == newestSettings {
		return series
	}
	return series + " (" + settings + ")"
}

// History renders the trend report of h: each metric's median over the
// last HistoryRuns runs whose fingerprint is fingerprint (the newest run's
// when empty), as a sparkline with the newest run tested for a change
// point (stats.DefaultLookback). Runs of other fingerprints are counted,
// with how their environment differs, and never compared.
func History(h results.History, fingerprint string) []byte {
	var b strings.Builder
	b.WriteString("# twnsbench history\n\n")
	runs := historyRuns(h.Lines)
	if fingerprint == "" && len(runs) > 0 {
		fingerprint = runs[len(runs)-1].fingerprint
	}
	var mine []*historyRun
	others := map[string][]*historyRun{}
	for _, r := range runs {
		if r.fingerprint == fingerprint {
			mine = append(mine, r)
		} else {
			others[r.fingerprint] = append(others[r.fingerprint], r)
		}
	}
	if len(mine) == 0 {
		fmt.Fprintf(&b, "No run of environment %s in the history.\n", codeSpan(orDash(fingerprint)))
		writeLeftOut(&b, others, nil, h.Unreadable)
		return []byte(b.String())
	}
	older := 0
	if len(mine) > HistoryRuns {
		older = len(mine) - HistoryRuns
		mine = mine[older:]
	}
	env := mine[len(mine)-1].env
	fmt.Fprintf(&b, "Environment %s: %s.\n\n", codeSpan(fingerprint), mdText(describeEnv(env)))
	fmt.Fprintf(&b, "%s of this environment, %s to %s", plural(len(mine), "run", "runs"), mdText(mine[0].time), mdText(mine[len(mine)-1].time))
	if older > 0 {
		fmt.Fprintf(&b, " (the newest %d; %d older ones are not shown)", HistoryRuns, older)
	}
	b.WriteString(".\n")
	writeLeftOut(&b, others, &env, h.Unreadable)
	l := stats.DefaultLookback
	fmt.Fprintf(&b, "\nChange points: the lookback z-score (as conbench): the newest run's median is flagged when it lies more "+
		"than %g robust standard deviations (1.4826 × the median absolute deviation, at least %g %% of the median) from the "+
		"median of the previous %d runs (at least %d; fewer: not tested, a dash). On noise alone this flags about 1 %% of "+
		"metrics per run, so a flag asks for a second look, not a verdict; a lower bound (≥, a censored reading) is not tested.\n\n",
		l.Z, 100*l.Floor, l.K, l.Min)
	fmt.Fprintf(&b, "The newest run's settings: %s; a metric measured under other settings is a trend of its own, named with them.\n\n", mdText(orDash(mine[len(mine)-1].settings)))
	b.WriteString(tableRow("Metric", "Unit", "Runs", "Trend (oldest → newest)", "Baseline", "Newest", "z", "Change") + "\n")
	b.WriteString("|---|---|---:|---|---:|---:|---:|---|\n")
	for _, s := range historySeries(mine) {
		b.WriteString(trendRow(s, mine, l) + "\n")
	}
	return []byte(b.String())
}

// historySeries are the series of runs, in the newest run's order first
// (as its cells came), then the others' by name.
func historySeries(runs []*historyRun) []string {
	seen := map[string]bool{}
	var out, rest []string
	newest := runs[len(runs)-1]
	keys := make([]string, 0, len(newest.cells))
	for k := range newest.cells {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		seen[k] = true
		out = append(out, k)
	}
	for _, r := range runs {
		for k := range r.cells {
			if !seen[k] {
				seen[k] = true
				rest = append(rest, k)
			}
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// trendRow is one series' row.
func trendRow(key string, runs []*historyRun, rule stats.Lookback) string {
	series := seriesTitle(key, runs[len(runs)-1].settings)
	var vals []float64 // NaN where a run lacks the series
	var last, previous results.HistoryLine
	var earlier []float64
	n := 0
	for i, r := range runs {
		c, ok := r.cells[key]
		if !ok {
			vals = append(vals, math.NaN())
			continue
		}
		n++
		vals = append(vals, c.Median)
		previous, last = last, c
		if i < len(runs)-1 && !c.MedianAtLeast() {
			earlier = append(earlier, c.Median)
		}
	}
	unit := orDash(last.Unit)
	if last.Better != "" {
		unit += " (" + last.Better + " is better)"
	}
	newest, ok := runs[len(runs)-1].cells[key]
	if !ok {
		return tableRow(series, unit, fmt.Sprint(n), sparkline(vals), dash, dash+" (not in the newest run)", dash, dash)
	}
	newestText := sig3(newest.Median)
	if newest.MedianAtLeast() {
		return tableRow(series, unit, fmt.Sprint(n), sparkline(vals), dash, "≥ "+newestText, dash, dash+" (a lower bound)")
	}
	t := rule.Test(earlier, newest.Median)
	if !t.Tested {
		return tableRow(series, unit, fmt.Sprint(n), sparkline(vals), dash, newestText, dash,
			fmt.Sprintf("%s (%s; %d needed)", dash, plural(t.Baseline, "earlier run", "earlier runs"), rule.Min))
	}
	word := changeWord(t, newest.Better)
	if changed := factChanges(previous, newest); t.Flagged && len(changed) > 0 {
		word += "; since the run before: " + joinAnd(changed)
	}
	return tableRow(series, unit, fmt.Sprint(n), sparkline(vals), sig3(t.Center), newestText, zText(t.Z), word)
}

// factChanges names what the transport's facts and the harness changed
// from a line to the next ("tw: tw 2.1.0 → tw 2.2.0"), by key.
func factChanges(from, to results.HistoryLine) []string {
	var out []string
	for _, k := range results.KeysOf(from.Facts, to.Facts) {
		if a, b := from.Facts[k], to.Facts[k]; a != b {
			out = append(out, fmt.Sprintf("%s: %s → %s", k, orDash(a), orDash(b)))
		}
	}
	if from.Harness != to.Harness {
		out = append(out, fmt.Sprintf("twnsbench: %s → %s", orDash(from.Harness), orDash(to.Harness)))
	}
	return out
}

// changeWord says what a test found: worse or better where the metric has
// a direction, up or down where it has none.
func changeWord(t stats.LookbackResult, better string) string {
	if !t.Flagged {
		return "no change"
	}
	up := t.Z > 0
	switch {
	case better == results.BetterHigher && up, better == results.BetterLower && !up:
		return "**better** (change point)"
	case better == results.BetterHigher, better == results.BetterLower:
		return "**worse** (change point)"
	case up:
		return "**up** (change point)"
	}
	return "**down** (change point)"
}

func zText(z float64) string {
	switch {
	case math.IsInf(z, 1):
		return "+∞"
	case math.IsInf(z, -1):
		return "−∞"
	}
	return strings.Replace(fmt.Sprintf("%+.1f", z), "-", "−", 1)
}

// sparkline draws values on eight levels between their least and their
// greatest (the middle level when all are equal); a run without a value
// is a middle dot.
func sparkline(vals []float64) string {
	const levels = "▁▂▃▄▅▆▇█"
	blocks := []rune(levels)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if !math.IsNaN(v) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	var b strings.Builder
	for _, v := range vals {
		switch {
		case math.IsNaN(v):
			b.WriteRune('·')
		case hi == lo:
			b.WriteRune(blocks[3])
		default:
			b.WriteRune(blocks[int(math.Round((v-lo)/(hi-lo)*7))])
		}
	}
	return b.String()
}

// describeEnv writes a fingerprint's parts as prose.
func describeEnv(e results.FingerprintEnv) string {
	parts := []string{"kernel " + orDash(e.Kernel), orDash(e.CPUModel), fmt.Sprintf("%d CPUs online", e.CoresOnline)}
	keys := make([]string, 0, len(e.Tools))
	for k := range e.Tools {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, k+" "+e.Tools[k])
	}
	for _, h := range e.Hosts {
		parts = append(parts, "host "+h)
	}
	return strings.Join(parts, ", ")
}

// writeLeftOut says which runs were left out and why: another environment
// (how it differs from env, when there is one to differ from), or a line
// that could not be read.
func writeLeftOut(b *strings.Builder, others map[string][]*historyRun, env *results.FingerprintEnv, unreadable int) {
	if len(others) > 0 {
		n := 0
		fps := make([]string, 0, len(others))
		for fp, rs := range others {
			n += len(rs)
			fps = append(fps, fp)
		}
		slices.Sort(fps)
		fmt.Fprintf(b, "\nLeft out: %s of %s, never compared with these (their figures are "+
			"not of this machine and tools):\n\n", plural(n, "run", "runs"), plural(len(others), "other environment", "other environments"))
		for _, fp := range fps {
			rs := others[fp]
			why := describeEnv(rs[len(rs)-1].env)
			if env != nil {
				why = "differs (here ≠ there): " + joinAnd(env.Differences(rs[len(rs)-1].env))
			}
			fmt.Fprintf(b, "- %s: %s, the newest %s; %s.\n", codeSpan(fp), plural(len(rs), "run", "runs"), mdText(rs[len(rs)-1].time), mdText(why))
		}
	}
	if unreadable > 0 {
		fmt.Fprintf(b, "\n%s of the history could not be read (not history lines): left out.\n", plural(unreadable, "line", "lines"))
	}
}
