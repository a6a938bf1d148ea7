package report

import (
	"fmt"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// ProfileFile and ProfileDarkFile are the differential flame graphs of a
// run of builds with --profile.
const (
	ProfileFile     = "bench-profile.svg"
	ProfileDarkFile = "bench-profile-dark.svg"
)

// profileComparisons are the document's profile comparisons, or none.
func profileComparisons(d *results.Document) []results.ProfileDiff {
	if d.Verdicts == nil || d.Verdicts.CPUProfile == nil {
		return nil
	}
	return d.Verdicts.CPUProfile.Comparisons
}

// hasFlame reports whether a comparison has a flame graph to draw.
func hasFlame(v *view) bool {
	for _, d := range profileComparisons(v.doc) {
		if d.Flame != nil && d.Flame.B > 0 {
			return true
		}
	}
	return false
}

// writeProfile is the section "Where the time went": per build pair and
// condition, the functions whose share of the sampled CPU changed most.
func writeProfile(w *writer, p *results.CPUProfile) {
	if p == nil {
		return
	}
	w.block("## Where the time went")
	w.block("The roles' CPU stacks sampled during each build's samples (" + p.Method + "). " +
		"A share is the part of a build's samples with the function on top of the stack (self) or anywhere in it " +
		"(inclusive); B − A in percentage points is the Hodges–Lehmann estimate over the rounds' changes with its " +
		"signed-rank 95 % interval (— below 6 rounds). A share says where the CPU went, not how much there was: " +
		"compare the samples per build too. The differential flame graph (" + ProfileFile + ", in the HTML report) " +
		"draws B's stacks, red where B spends a larger share than A, blue where a smaller.")
	if len(p.Comparisons) == 0 {
		w.block("No comparison: no round had stacks of both builds.")
		return
	}
	for _, d := range p.Comparisons {
		w.block("### " + d.Transport + " · " + d.Condition)
		w.block(fmt.Sprintf("%s: %d samples; %s: %d samples; %s. Folded stacks: [%s](%s), [%s](%s).",
			d.A.Row, d.A.Samples, d.B.Row, d.B.Samples, plural(d.Rounds, "round", "rounds"),
			d.A.Folded, d.A.Folded, d.B.Folded, d.B.Folded))
		rows := []string{"| Function | Self A | Self B | Self B − A | Interval | Incl. A | Incl. B | Incl. B − A | Interval |",
			"|---|---|---|---|---|---|---|---|---|"}
		for _, f := range d.Functions {
			rows = append(rows, tableRow("`"+strings.ReplaceAll(f.Name, "`", "'")+"`", sharePct(f.SelfA), sharePct(f.SelfB), pointsText(f.Self.Delta), pointsInterval(f.Self),
				sharePct(f.InclA), sharePct(f.InclB), pointsText(f.Incl.Delta), pointsInterval(f.Incl)))
		}
		w.block(rows...)
	}
}

// sharePct is a share in percent: "12.3 %".
func sharePct(x float64) string { return num(x, 1) + " %" }

// pointsText is a change in percentage points: "+1.24 pp".
func pointsText(x *float64) string {
	if x == nil {
		return dash
	}
	return signed3(*x) + " pp"
}

func pointsInterval(c results.ShareChange) string {
	if c.Lo == nil || c.Hi == nil {
		return dash
	}
	return signed3(*c.Lo) + " to " + signed3(*c.Hi)
}
