// Package textfmt is how the report and the verdict's CI formats write
// what they share: an absent figure, a number to three significant
// digits, a count with its noun, text taken from data made plain
// Markdown, a table row, and the File a renderer returns.
package textfmt

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/textsafe"
)

// Dash marks a cell whose data is absent. The report never fills a gap with
// an estimate.
const Dash = "—"

// File is one file of the report. A nil Body means the document has
// nothing for it: a writer removes a file of that name left by an earlier
// render, so the directory never shows another run's chart.
type File struct {
	Name string
	Body []byte
}

// Sig3 writes x with three significant digits, never in exponent form
// (1.523 → 1.52, 45012 → 45012, 0.01234 → 0.0123); a dash for NaN.
func Sig3(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return Dash
	}
	if x == 0 {
		return "0"
	}
	dec := max(0, 2-int(math.Floor(math.Log10(math.Abs(x)))))
	return strconv.FormatFloat(x, 'f', dec, 64)
}

// Signed3 is Sig3 with a sign: "+3.2", "-0.5", "0".
func Signed3(x float64) string {
	if x > 0 {
		return "+" + Sig3(x)
	}
	return Sig3(x)
}

// Pct writes a fraction as a percentage: 0.05 → "5 %".
func Pct(x float64) string { return strconv.FormatFloat(100*x, 'g', 3, 64) + " %" }

// Plural is n with its noun: "1 run", "3 runs".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// TableRow joins cells into one Markdown table row. Cell text is escaped
// (escapeCell) so that a "|" or a line break inside a value cannot split
// the table, and a name taken from a document cannot become HTML or a
// link.
func TableRow(cells ...string) string {
	esc := make([]string, len(cells))
	for i, c := range cells {
		esc[i] = escapeCell(c)
	}
	return "| " + strings.Join(esc, " | ") + " |"
}

// SeparatorRow is the reference's "|---|---|…" line for n columns.
func SeparatorRow(n int) string {
	return "|" + strings.Repeat("---|", n)
}

// escapeCell is MDText for a table cell, whose line breaks become
// spaces and whose "|" is escaped. Backticks stay: the report's own cells
// hold code spans, and inside one nothing is live.
func escapeCell(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ").Replace(s)
	return strings.ReplaceAll(cellEscaper.Replace(textsafe.Quote(s)), "|", `\|`)
}

// MDText makes text taken from data (a name, a label, a version, a host,
// a reason) plain text in Markdown read by GitHub or any CommonMark
// renderer: its control characters quoted (textsafe.Quote), "&", "<" and
// ">" written as entities so no HTML tag, entity or autolink forms, and
// "\", "[", "]" and "`" backslash-escaped so no link, image or code span
// forms. Letters, digits, spaces and ordinary punctuation are unchanged.
func MDText(s string) string { return mdEscaper.Replace(textsafe.Quote(s)) }

var (
	cellEscaper = strings.NewReplacer(`\`, `\\`, "&", "&amp;", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`)
	mdEscaper   = strings.NewReplacer(`\`, `\\`, "&", "&amp;", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`, "`", "\\`")
)

// OwnMinEffect is a verdict's cell, named as the reader selects it
// ("iperf3-instr/value"), and the min effect it was decided with.
type OwnMinEffect struct {
	Name      string
	MinEffect float64
}

// MinEffects says what min effect a run's verdicts used: the run's, and,
// once per name, each cell's own where it differs (its metric's):
// "5 % (iperf3-instr/value 2 %, its metric's own)". Names are data, made
// plain Markdown.
func MinEffects(run float64, cells []OwnMinEffect) string {
	var own []string
	seen := map[string]bool{}
	for _, c := range cells {
		s := MDText(c.Name) + " " + Pct(c.MinEffect)
		if c.MinEffect <= 0 || c.MinEffect == run || seen[s] {
			continue
		}
		seen[s] = true
		own = append(own, s)
	}
	if len(own) == 0 {
		return Pct(run)
	}
	return Pct(run) + " (" + strings.Join(own, ", ") + ", its metric's own)"
}
