package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/report/textfmt"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
	"github.com/twnsbench/twnsbench/nsbench/textsafe"
)

// The report's short names for what it shares with the CI formats
// (textfmt): an absent figure, three significant digits, a count with its
// noun, a Markdown table row, text from data made plain Markdown, a
// fraction as a percentage.
const dash = textfmt.Dash

func sig3(x float64) string                 { return textfmt.Sig3(x) }
func signed3(x float64) string              { return textfmt.Signed3(x) }
func plural(n int, one, many string) string { return textfmt.Plural(n, one, many) }
func tableRow(cells ...string) string       { return textfmt.TableRow(cells...) }
func separatorRow(n int) string             { return textfmt.SeparatorRow(n) }
func mdText(s string) string                { return textfmt.MDText(s) }
func pctText(x float64) string              { return textfmt.Pct(x) }

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
