package report

import (
	"fmt"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/report/textfmt"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// writeBuilds lists each build's programs (version and SHA-256; across
// hosts each role's host's copy too) and, when
// the run compared two builds, every cell's verdict and the rounds' order.
func (v *view) writeBuilds(w *writer) {
	lines := []string{"| Row | Build | Program | Version | SHA-256 | Path |", "|---|---|---|---|---|---|"}
	n := 0
	for _, t := range v.doc.Transports {
		if t.Build == nil {
			continue
		}
		for _, p := range t.Build.Programs {
			n++
			lines = append(lines, tableRow(t.Name, t.Build.Label, p.Option, orDash(p.Version), orDash(p.SHA256), p.Path))
			// Across hosts, what each role's host ran: its copy, read there.
			for _, c := range p.Hosts {
				lines = append(lines, tableRow(t.Name, t.Build.Label, p.Option+" on the "+c.Role+"'s host, "+c.Host,
					orDash(c.Version), orDash(c.SHA256), c.Path))
			}
		}
	}
	if n == 0 {
		return
	}
	w.block("## Builds")
	w.block(lines...)
	vs := v.doc.Verdicts
	if vs == nil {
		return
	}
	w.block("## Verdicts")
	var own []textfmt.OwnMinEffect
	for _, c := range vs.Cells {
		own = append(own, textfmt.OwnMinEffect{Name: c.Instrument + "/" + c.Metric, MinEffect: c.MinEffect})
	}
	minEffect := textfmt.MinEffects(vs.MinEffect, own)
	w.block(fmt.Sprintf("Build B against build A, per cell: paired rounds in %s order (A then B in odd rounds, B then A in even ones); "+
		"slower or faster only when significant and at least %s; no change only when the whole interval lies within ±%s. "+
		"Cells marked ✱ set the exit code (--fail-on %s).%s",
		vs.Order, minEffect, minEffect, strings.Join(vs.FailOn, ","), adjustedNote(vs.Cells)))
	rows := []string{"| Transport | A | B | Condition | Instrument | Metric | Pairs | B/A | Interval | Smallest detectable | Verdict |", "|---|---|---|---|---|---|---|---|---|---|---|"}
	for _, c := range vs.Cells {
		verdict := c.Verdict
		if c.Counts {
			verdict += " ✱"
		}
		rows = append(rows, tableRow(c.Transport, c.A, c.B, c.Condition, c.Instrument, c.Metric, pairsText(c),
			changeText(c), changeInterval(c), changeMDE(c), verdict))
	}
	w.block(rows...)
	writeProfile(w, vs.CPUProfile)
}

// adjustedNote says, when some ratio cell was adjusted for the host's
// other work, what that means.
func adjustedNote(cs []results.Verdict) string {
	for _, c := range cs {
		if c.NoiseSlope != nil {
			return " A rate or cost cell whose every pair knows the CPU share the host's other work left each reading is decided " +
				"as if A and B had been left the same share (each round's B/A divided by the shares' ratio to the power the pairs fit); " +
				"its smallest detectable change before that adjustment is given beside."
		}
	}
	return ""
}

func pairsText(c results.Verdict) string {
	var notes []string
	if c.Bounded > 0 {
		notes = append(notes, fmt.Sprintf("%d at a bound", c.Bounded))
	}
	if c.Censored > 0 {
		notes = append(notes, fmt.Sprintf("%d censored", c.Censored))
	}
	if len(notes) > 0 {
		return fmt.Sprintf("%d (%s)", c.Pairs, strings.Join(notes, ", "))
	}
	return fmt.Sprint(c.Pairs)
}

// changeText is a cell's B/A, or "B − A +3.2 ms" for a cell decided on
// the difference.
func changeText(c results.Verdict) string {
	if c.Scale == "" {
		return ratioText(c.Ratio)
	}
	if c.Delta == nil {
		return dash
	}
	return "B − A " + deltaText(*c.Delta, c.Unit)
}

func changeInterval(c results.Verdict) string {
	if c.Scale == "" {
		return intervalText(c.Lo, c.Hi)
	}
	if c.DeltaLo == nil || c.DeltaHi == nil {
		return dash
	}
	return deltaText(*c.DeltaLo, "") + " to " + deltaText(*c.DeltaHi, c.Unit)
}

func changeMDE(c results.Verdict) string {
	if c.Scale == "" || c.MDE == nil {
		if c.MDEUnadjusted != nil && c.MDE != nil {
			return mdeText(c.MDE) + " (" + mdeText(c.MDEUnadjusted) + " before adjusting for the host's other work)"
		}
		return mdeText(c.MDE)
	}
	return "±" + strings.TrimPrefix(deltaText(*c.MDE, c.Unit), "+")
}

// deltaText is a signed difference of three significant digits with its
// unit: "+3.21 ms".
func deltaText(x float64, unit string) string {
	s := signed3(x)
	if unit != "" {
		s += " " + unit
	}
	return s
}

func ratioText(x *float64) string {
	if x == nil {
		return dash
	}
	return num(*x, 3)
}

func intervalText(lo, hi *float64) string {
	if lo == nil || hi == nil {
		return dash
	}
	return num(*lo, 3) + "–" + num(*hi, 3)
}

func mdeText(x *float64) string {
	if x == nil {
		return dash
	}
	return "±" + pct(*x) + " %"
}

// VerdictSummary is the run's verdicts in a few lines for the terminal:
// one per cell --fail-on selects.
func VerdictSummary(d *results.Document) string {
	if d == nil || d.Verdicts == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range d.Verdicts.Cells {
		if c.Counts {
			change := "B/A " + ratioText(c.Ratio)
			if c.Scale != "" {
				change = changeText(c)
			}
			fmt.Fprintf(&b, "verdict: %s vs %s, %s / %s / %s: %s (%s, interval %s, %s pairs)\n",
				c.B, c.A, c.Condition, c.Instrument, c.Metric, c.Verdict, change, changeInterval(c), pairsText(c))
		}
	}
	return b.String()
}

// RegressionLine is the one line of a run whose build B is confirmed
// slower in cells --fail-on selects.
func RegressionLine(vs []results.Verdict) string {
	return fmt.Sprintf("regression: %s is slower than %s in %d cell(s): %s", vs[0].B, vs[0].A, len(vs), cellList(vs))
}

// UndecidedLine is the one line of a run whose verdict is undecided in
// cells --fail-on selects.
func UndecidedLine(vs []results.Verdict) string {
	return fmt.Sprintf("undecided: %d cell(s) could not be decided within the rounds allowed (more rounds, --max-rounds, or a quieter host): %s", len(vs), cellList(vs))
}

func cellList(vs []results.Verdict) string {
	var names []string
	for _, c := range vs {
		names = append(names, c.Transport+" "+c.Condition+"/"+c.Instrument+"/"+c.Metric)
	}
	return strings.Join(names, ", ")
}
