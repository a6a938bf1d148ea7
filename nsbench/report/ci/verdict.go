// Package ci writes the A/B verdicts a results document records in the
// forms CI systems read: GitHub's step summary and workflow annotations,
// JUnit XML, Bencher's metric format and github-action-benchmark's files.
// Like the report, it renders from the document alone.
package ci

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/report/textfmt"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/verdict"
)

// ABRun is what an A/B verdict's summary states beside its cells: which
// builds were compared, under which thresholds, and on what.
type ABRun struct {
	A, B        string // the variants' labels, e.g. "tw@old" and "tw@new"
	Options     verdict.Options
	Versions    results.Facts // per variant: the version its program reports and the binary's SHA-256
	Environment results.Facts // kernel, CPU model, cores online, tool versions
}

// abCell is a verdict's cell as the CI formats name and summarise it:
// the recorded verdict with its absent figures as NaN.
type abCell struct {
	r          verdict.Result // the estimate, counts, verdict and reason; no pairs
	aMed, bMed float64        // the medians of the readings the verdict used
	bLo, bHi   float64        // the 95 % interval of B's median; NaN when its readings are too few
}

func abCells(vs []results.Verdict) []abCell {
	out := make([]abCell, len(vs))
	for i, v := range vs {
		out[i] = abCell{
			r: verdict.Result{
				Cell: verdict.Cell{Transport: v.Transport, Condition: v.Condition, Instrument: v.Instrument,
					Metric: v.Metric, Unit: v.Unit, Better: v.Better},
				Scale:      verdict.Scale(v.Scale),
				PairCounts: verdict.PairCounts{N: v.Pairs, Censored: v.Censored, Bounded: v.Bounded},
				Change: verdict.Change{Ratio: orNaN(v.Ratio), Lo: orNaN(v.Lo), Hi: orNaN(v.Hi),
					Delta: orNaN(v.Delta), DeltaLo: orNaN(v.DeltaLo), DeltaHi: orNaN(v.DeltaHi)},
				Significance: verdict.Significance{P: orNaN(v.P), Q: orNaN(v.Q)}, MDE: orNaN(v.MDE),
				Threshold: verdict.Threshold{MinEffect: v.MinEffect},
				Verdict:   verdict.Kind(v.Verdict), Reason: v.Reason,
			},
			aMed: orNaN(v.AMedian), bMed: orNaN(v.BMedian), bLo: orNaN(v.BMedianLo), bHi: orNaN(v.BMedianHi),
		}
	}
	return out
}

// orNaN is *x, or NaN for an absent figure.
func orNaN(x *float64) float64 {
	if x == nil {
		return math.NaN()
	}
	return *x
}

// parts are the cell's names, the metric left out when it is the
// instrument's one "value".
func (c abCell) parts() []string {
	var ps []string
	for _, p := range []string{c.r.Transport, c.r.Condition, c.r.Instrument} {
		if p != "" {
			ps = append(ps, p)
		}
	}
	if c.r.Metric != "" && c.r.Metric != "value" {
		ps = append(ps, c.r.Metric)
	}
	return ps
}

// title is the cell for people: "tw · lan · iperf3-1".
func (c abCell) title() string { return strings.Join(c.parts(), " · ") }

// key is the cell for machines that track it across runs: "tw/lan/iperf3-1".
func (c abCell) key() string { return strings.Join(c.parts(), "/") }

// change writes a ratio as a signed percentage: 0.854 → "-14.6 %".
func change(ratio float64) string {
	if math.IsNaN(ratio) {
		return textfmt.Dash
	}
	return fmt.Sprintf("%+.1f %%", 100*(ratio-1))
}

// changeWithInterval is "-14.6 % (-17.0 to -12.0)" for a ratio cell,
// "+3.2 ms (+1.05 to +5.5)" for a difference or count, or without the
// interval when there is none.
func (c abCell) changeWithInterval() string {
	r := c.r
	if r.Scale != verdict.ScaleRatio {
		if math.IsNaN(r.DeltaLo) || math.IsNaN(r.DeltaHi) {
			return c.delta(r.Delta)
		}
		return fmt.Sprintf("%s (%s to %s)", c.delta(r.Delta), textfmt.Signed3(r.DeltaLo), textfmt.Signed3(r.DeltaHi))
	}
	if math.IsNaN(r.Lo) || math.IsNaN(r.Hi) {
		return change(r.Ratio)
	}
	return fmt.Sprintf("%s (%+.1f to %+.1f)", change(r.Ratio), 100*(r.Lo-1), 100*(r.Hi-1))
}

// delta writes a change B − A in the cell's unit: "+3.2 ms".
func (c abCell) delta(x float64) string {
	if math.IsNaN(x) {
		return textfmt.Dash
	}
	if c.r.Unit == "" {
		return textfmt.Signed3(x)
	}
	return textfmt.Signed3(x) + " " + c.r.Unit
}

// mdeText is the smallest detectable change (relative, or in the unit
// for a difference or count), or a dash.
func (c abCell) mdeText() string {
	if math.IsNaN(c.r.MDE) {
		return textfmt.Dash
	}
	if c.r.Scale != verdict.ScaleRatio {
		return strings.TrimPrefix(c.delta(c.r.MDE), "+")
	}
	return fmt.Sprintf("%.1f %%", 100*c.r.MDE)
}

// sentence says a cell's verdict in one line: what changed, by how much,
// and why the verdict is what it is.
func (c abCell) sentence() string {
	r := c.r
	var s string
	switch {
	case r.Scale != verdict.ScaleRatio && !math.IsNaN(r.Delta):
		s = fmt.Sprintf("B − A %s", c.delta(r.Delta))
		if !math.IsNaN(r.DeltaLo) {
			s += fmt.Sprintf(" (interval %s to %s)", textfmt.Signed3(r.DeltaLo), textfmt.Signed3(r.DeltaHi))
		}
		s += fmt.Sprintf(" over %d pairs", r.N)
	case math.IsNaN(r.Ratio):
		s = "no usable pairs"
	default:
		s = fmt.Sprintf("B/A %s", textfmt.Sig3(r.Ratio))
		if !math.IsNaN(r.Lo) {
			s += fmt.Sprintf(" (interval %s to %s)", textfmt.Sig3(r.Lo), textfmt.Sig3(r.Hi))
		}
		s += fmt.Sprintf(", %s over %d pairs", change(r.Ratio), r.N)
	}
	if r.Censored > 0 {
		s += fmt.Sprintf(", %s left out", textfmt.Plural(r.Censored, "censored pair", "censored pairs"))
	}
	if r.Reason != "" {
		s += "; " + r.Reason
	}
	if !math.IsNaN(r.MDE) {
		s += fmt.Sprintf("; smallest detectable change %s", c.mdeText())
	}
	return s
}

// WriteGitHubAnnotations writes one GitHub Actions workflow command per
// cell that needs attention: "::error" for a slower cell (a regression),
// "::warning" for an undecided one. Other cells write nothing. Titles and
// messages are escaped as the Actions toolkit does (% CR LF in both, and
// ":" "," in the title), so a name cannot end the command or start
// another.
func WriteGitHubAnnotations(w io.Writer, rs []results.Verdict) error {
	for _, c := range abCells(rs) {
		var cmd string
		switch c.r.Verdict {
		case verdict.Slower:
			cmd = "error"
		case verdict.Undecided:
			cmd = "warning"
		default:
			continue
		}
		title := fmt.Sprintf("%s: %s", c.title(), c.r.Verdict)
		if _, err := fmt.Fprintf(w, "::%s title=%s::%s\n", cmd, escapeActionProperty(title), escapeActionData(c.sentence())); err != nil {
			return fmt.Errorf("write annotation: %w", err)
		}
	}
	return nil
}

// escapeActionData escapes a workflow command's message
// (actions/toolkit, packages/core/src/command.ts, escapeData).
func escapeActionData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeActionProperty escapes a workflow command's property value
// (command.ts, escapeProperty).
func escapeActionProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// WriteStepSummary writes the Markdown a GitHub Actions job appends to
// $GITHUB_STEP_SUMMARY: the count of verdicts, the verdict table (cell, A,
// B, change with its interval, smallest detectable change, verdict and
// why), the versions and the environment.
func WriteStepSummary(w io.Writer, rs []results.Verdict, run ABRun) error {
	o := run.Options.WithDefaults()
	cells := abCells(rs)
	var own []textfmt.OwnMinEffect
	for _, c := range cells {
		own = append(own, textfmt.OwnMinEffect{Name: c.r.Instrument + "/" + c.r.Metric, MinEffect: c.r.MinEffect})
	}
	minEffect := textfmt.MinEffects(o.MinEffectFor(verdict.Cell{}), own)
	var b strings.Builder
	fmt.Fprintf(&b, "## A/B verdict: %s (A) against %s (B)\n\n", textfmt.MDText(run.A), textfmt.MDText(run.B))
	count := map[verdict.Kind]int{}
	for _, c := range cells {
		count[c.r.Verdict]++
	}
	var tally []string
	for _, k := range []verdict.Kind{verdict.Slower, verdict.Undecided, verdict.Faster, verdict.NoChange} {
		if count[k] > 0 {
			tally = append(tally, fmt.Sprintf("%d %s", count[k], k))
		}
	}
	if len(tally) == 0 {
		tally = []string{"no cells"}
	}
	fmt.Fprintf(&b, "%s of %d cells. A cell is slower or faster when its change is significant "+
		"(q < %g after Benjamini–Hochberg), at least %s, and confirmed by each half of its pairs alone (the later half at least %d); "+
		"no change when its whole %s interval (B against A) lies within ±%s.\n\n",
		strings.Join(tally, ", "), len(cells), o.Alpha, minEffect, verdict.ConfirmPairs, textfmt.Pct(1-o.Alpha), minEffect)
	b.WriteString(textfmt.TableRow("Cell", "Unit", "A (median)", "B (median)", "B against A (interval)", "Smallest detectable", "Pairs", "Verdict") + "\n")
	b.WriteString(textfmt.SeparatorRow(8) + "\n")
	for _, c := range cells {
		v := string(c.r.Verdict)
		if c.r.Verdict == verdict.Slower {
			v = "**" + v + "**"
		}
		if c.r.Reason != "" {
			v += ": " + c.r.Reason
		}
		pairs := strconv.Itoa(c.r.N)
		if c.r.Censored > 0 {
			pairs += fmt.Sprintf(" (+%d censored)", c.r.Censored)
		}
		b.WriteString(textfmt.TableRow(c.title(), c.r.Unit, textfmt.Sig3(c.aMed), textfmt.Sig3(c.bMed),
			c.changeWithInterval(), c.mdeText(), pairs, v) + "\n")
	}
	for _, sec := range []struct {
		name  string
		facts results.Facts
	}{{"Versions", run.Versions}, {"Environment", run.Environment}} {
		if len(sec.facts) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n", sec.name)
		b.WriteString(textfmt.TableRow("", "") + "\n" + textfmt.SeparatorRow(2) + "\n")
		for _, f := range sec.facts {
			label := f.Label
			if label == "" {
				label = f.Key
			}
			b.WriteString(textfmt.TableRow(label, f.Value) + "\n")
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write step summary: %w", err)
	}
	return nil
}
