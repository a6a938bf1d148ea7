package ci

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"

	"github.com/twnsbench/twnsbench/nsbench/report/textfmt"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/verdict"
)

// junitSuite is JUnit XML as GitLab and Jenkins read it: one testsuite,
// one testcase per cell.
type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the verdicts as one JUnit testsuite ("twnsbench A/B")
// with a testcase per cell, classname the transport and name the rest of
// the cell: a slower cell is a <failure>, an undecided one <skipped> with
// its reason, and the others pass with their numbers in <system-out>.
// encoding/xml escapes every name.
func WriteJUnit(w io.Writer, rs []results.Verdict) error {
	suite := junitSuite{Name: "twnsbench A/B", Tests: len(rs)}
	for _, c := range abCells(rs) {
		name := c.key()
		if c.r.Transport != "" {
			name = name[len(c.r.Transport):]
			if len(name) > 0 && name[0] == '/' {
				name = name[1:]
			}
		}
		tc := junitCase{ClassName: c.r.Transport, Name: name}
		msg := fmt.Sprintf("%s: %s", c.r.Verdict, c.sentence())
		switch c.r.Verdict {
		case verdict.Slower:
			tc.Failure = &junitMessage{Message: msg, Type: string(c.r.Verdict), Text: msg}
			suite.Failures++
		case verdict.Undecided:
			tc.Skipped = &junitMessage{Message: msg}
			suite.Skipped++
		default:
			tc.SystemOut = msg
		}
		suite.Cases = append(suite.Cases, tc)
	}
	out, err := xml.MarshalIndent(suite, "", "  ")
	if err != nil {
		return fmt.Errorf("encode junit: %w", err)
	}
	if _, err := fmt.Fprintf(w, "%s%s\n", xml.Header, out); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return nil
}

// bmfMetric is one measure's reading in the Bencher Metric Format; the
// bounds are optional. https://bencher.dev/docs/reference/bencher-metric-format/
type bmfMetric struct {
	Value float64  `json:"value"`
	Lower *float64 `json:"lower_value,omitempty"`
	Upper *float64 `json:"upper_value,omitempty"`
}

// bound is x for an optional JSON bound, nil when x is not a number.
func bound(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// WriteBMF writes the verdicts in the Bencher Metric Format
// (https://bencher.dev/docs/reference/bencher-metric-format/): one
// benchmark per cell, keyed "transport/condition/instrument[/metric]",
// with two measures — the cell's unit (B's median, bounded by its 95 %
// interval when one exists) and "B/A" (the ratio with its interval), or
// "B-A" for a cell decided on the difference (in its unit). A
// cell with no usable pair has neither; a number that was not measured is
// left out, never written as 0.
func WriteBMF(w io.Writer, rs []results.Verdict) error {
	doc := map[string]map[string]bmfMetric{}
	for _, c := range abCells(rs) {
		if math.IsNaN(c.bMed) {
			continue
		}
		m := map[string]bmfMetric{}
		unit := c.r.Unit
		if unit == "" {
			unit = "value"
		}
		b := bmfMetric{Value: c.bMed}
		if !math.IsNaN(c.bLo) {
			b.Lower, b.Upper = bound(c.bLo), bound(c.bHi)
		}
		m[unit] = b
		if c.r.Scale != verdict.ScaleRatio {
			m["B-A"] = bmfMetric{Value: c.r.Delta, Lower: bound(c.r.DeltaLo), Upper: bound(c.r.DeltaHi)}
		} else {
			m["B/A"] = bmfMetric{Value: c.r.Ratio, Lower: bound(c.r.Lo), Upper: bound(c.r.Hi)}
		}
		doc[c.key()] = m
	}
	return writeJSON(w, doc, "bmf")
}

// writeJSON writes v as indented JSON and a newline; what names it in an
// error.
func writeJSON(w io.Writer, v any, what string) error {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	if _, err := fmt.Fprintf(w, "%s\n", out); err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	return nil
}

// actionBench is one entry of github-action-benchmark's custom tools,
// "customBiggerIsBetter" and "customSmallerIsBetter" (its README, "Examples"
// and the custom benchmark example:
// https://github.com/benchmark-action/github-action-benchmark#examples).
type actionBench struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	Range string  `json:"range,omitempty"`
	Extra string  `json:"extra,omitempty"`
}

// ActionBenchmarkFiles names the file VerdictFiles writes for
// each direction, and the github-action-benchmark tool that reads it.
var ActionBenchmarkFiles = []struct{ Better, File, Tool string }{
	{results.BetterHigher, "action-benchmark-bigger.json", "customBiggerIsBetter"},
	{results.BetterLower, "action-benchmark-smaller.json", "customSmallerIsBetter"},
}

// WriteActionBenchmark writes the cells whose metric is better in
// direction better (results.BetterHigher or BetterLower) as a
// github-action-benchmark custom-tool array: name the cell's key, value
// B's median, range its 95 % interval (left out when none exists), extra
// the verdict in one line. A cell with no usable pair is left out.
func WriteActionBenchmark(w io.Writer, rs []results.Verdict, better string) error {
	entries := []actionBench{}
	for _, c := range abCells(rs) {
		if c.r.Better != better || math.IsNaN(c.bMed) {
			continue
		}
		e := actionBench{Name: c.key(), Unit: c.r.Unit, Value: c.bMed,
			Extra: fmt.Sprintf("%s: %s; A median %s", c.r.Verdict, c.sentence(), textfmt.Sig3(c.aMed))}
		if !math.IsNaN(c.bLo) {
			e.Range = fmt.Sprintf("95 %% interval %s to %s", textfmt.Sig3(c.bLo), textfmt.Sig3(c.bHi))
		}
		entries = append(entries, e)
	}
	return writeJSON(w, entries, "action benchmark")
}

// hasDirection reports whether some cell of rs, better in direction
// better, has readings to write.
func hasDirection(rs []results.Verdict, better string) bool {
	for _, r := range rs {
		if r.Better == better && r.AMedian != nil {
			return true
		}
	}
	return false
}
