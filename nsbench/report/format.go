package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
	"github.com/twnsbench/twnsbench/nsbench/textsafe"
)

// dash marks a cell whose data is absent. The report never fills a gap with
// an estimate.
const dash = "—"

// Decimal places per quantity, as the reference report prints them.
const (
	precGbps    = 2 // iperf3 Gbit/s and Gbit/s per busy core
	precTrans   = 0 // TCP_RR transactions/s
	precMicros  = 0 // TCP_RR p50/p99
	precMBps    = 0 // scp MB/s
	precWall    = 1 // scp wall seconds
	precCPU     = 1 // CPU-seconds per role
	precPercent = 1 // wire overhead
	precMiB     = 1 // peak RSS
)

// num formats x with prec decimals. strconv rounds the exact binary value
// half-to-even, which is what the reference's generator did (checked cell
// for cell by the golden test).
func num(x float64, prec int) string {
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// rangeCell renders "median (min–max)". When the cell holds fewer values than
// the configured runs (a failed instrument or an interrupted run), or runs
// is 0 (each cell has its own n), it adds "; n=K" so a thin cell is not
// read as a full one.
func rangeCell(xs []float64, prec, runs int) string {
	s := stats.Summarize(xs)
	if s.N == 0 {
		return dash
	}
	out := fmt.Sprintf("%s (%s–%s", num(s.Median, prec), num(s.Min, prec), num(s.Max, prec))
	if s.N != runs {
		out += fmt.Sprintf("; n=%d", s.N)
	}
	return out + ")"
}

// boundRangeCell is rangeCell of readings some of which may be lower
// bounds (censored): each figure that is one reads "≥" itself — the
// median when a censored reading is at or below it, the min when it is
// censored, the max whenever one is — never the whole cell.
func boundRangeCell(rs []results.Reading, prec, runs int) string {
	xs := results.ValuesOf(rs)
	s := stats.Summarize(xs)
	if s.N == 0 {
		return dash
	}
	out := fmt.Sprintf("%s%s (%s%s–%s%s", atLeastMark(results.MedianAtLeast(rs)), num(s.Median, prec),
		atLeastMark(results.OrderStatAtLeast(rs, s.Min)), num(s.Min, prec), atLeastMark(results.OrderStatAtLeast(rs, s.Max)), num(s.Max, prec))
	if s.N != runs {
		out += fmt.Sprintf("; n=%d", s.N)
	}
	return out + ")"
}

// medianCell renders the median alone, or a dash when there is no value.
func medianCell(xs []float64, prec int) string {
	s := stats.Summarize(xs)
	if s.N == 0 {
		return dash
	}
	return num(s.Median, prec)
}

// sizeLabel renders a byte count in the largest binary unit it reaches:
// whole units without decimals (5368709120 → "5 GiB"), otherwise one
// decimal ("1.5 GiB").
func sizeLabel(b int64) string {
	units := []struct {
		size int64
		name string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}}
	for _, u := range units {
		if b < u.size {
			continue
		}
		if b%u.size == 0 {
			return fmt.Sprintf("%d %s", b/u.size, u.name)
		}
		return num(float64(b)/float64(u.size), 1) + " " + u.name
	}
	return fmt.Sprintf("%d B", b)
}

// tableRow joins cells into one Markdown table row. Cell text is escaped
// (escapeCell) so that a "|" or a line break inside a value cannot split
// the table, and a name taken from a document cannot become HTML or a
// link.
func tableRow(cells ...string) string {
	esc := make([]string, len(cells))
	for i, c := range cells {
		esc[i] = escapeCell(c)
	}
	return "| " + strings.Join(esc, " | ") + " |"
}

// escapeCell is mdText for a table cell, whose line breaks become
// spaces and whose "|" is escaped. Backticks stay: the report's own cells
// hold code spans, and inside one nothing is live.
func escapeCell(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ").Replace(s)
	return strings.ReplaceAll(cellEscaper.Replace(textsafe.Quote(s)), "|", `\|`)
}

// mdText makes text taken from data (a name, a label, a version, a host,
// a reason) plain text in Markdown read by GitHub or any CommonMark
// renderer: its control characters quoted (textsafe.Quote), "&", "<" and
// ">" written as entities so no HTML tag, entity or autolink forms, and
// "\", "[", "]" and "`" backslash-escaped so no link, image or code span
// forms. Letters, digits, spaces and ordinary punctuation are unchanged.
func mdText(s string) string { return mdEscaper.Replace(textsafe.Quote(s)) }

var (
	cellEscaper = strings.NewReplacer(`\`, `\\`, "&", "&amp;", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`)
	mdEscaper   = strings.NewReplacer(`\`, `\\`, "&", "&amp;", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`, "`", "\\`")
)

// codeSpan writes s from data as inline code: nothing inside one is
// live, so only its control characters are quoted, and its delimiter is
// a run of backticks longer than any in s (CommonMark), spaced off s when
// s holds one.
func codeSpan(s string) string {
	s = textsafe.Quote(s)
	if !strings.Contains(s, "`") {
		return "`" + s + "`"
	}
	d := fence(s) // longer than s's longest run
	return d + " " + s + " " + d
}

// separatorRow is the reference's "|---|---|…" line for n columns.
func separatorRow(n int) string {
	return "|" + strings.Repeat("---|", n)
}

// fence returns a code fence longer than any backtick run in s, so captured
// output containing ``` cannot end the block early.
func fence(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// joinAnd joins items as prose: "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
