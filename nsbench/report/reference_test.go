package report

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The reference run (tw's Docker benchmark) and the report its harness made
// from it, copied unchanged. Rendering the JSON must reproduce the report's
// tables cell for cell: that pins down every rounding and median rule.
const (
	referenceJSON   = "testdata/reference-bench-results.json"
	referenceReport = "testdata/reference-bench-report.md"
)

func renderReference(t *testing.T) []byte {
	t.Helper()
	d, err := results.Read(referenceJSON)
	if err != nil {
		t.Fatal(err)
	}
	return Markdown(d)
}

// tableRows returns the table lines under the Environment, Results and
// Memory headings, each prefixed with its heading so that a row that moved to
// another table does not match.
func tableRows(md []byte) []string {
	var rows []string
	heading := ""
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "## ") {
			heading = line
			continue
		}
		if !strings.HasPrefix(line, "|") || !checkedHeading(heading) {
			continue
		}
		rows = append(rows, heading+"\n"+line)
	}
	return rows
}

func checkedHeading(h string) bool {
	return h == "## Environment" || h == "## Memory footprint" || strings.HasPrefix(h, "## Results — ")
}

func TestReferenceTablesCellForCell(t *testing.T) {
	want, err := os.ReadFile(referenceReport)
	if err != nil {
		t.Fatal(err)
	}
	wantRows := tableRows(want)
	gotRows := tableRows(renderReference(t))
	if len(wantRows) < 30 {
		t.Fatalf("found only %d table rows in %s; the extraction is broken", len(wantRows), referenceReport)
	}
	// Every reference row must appear in the rendered output, in order.
	next := 0
	for _, w := range wantRows {
		i := indexFrom(gotRows, w, next)
		if i < 0 {
			t.Errorf("reference row not rendered (in order):\n%s", rowDiff(w, closestRow(gotRows, w, next)))
			continue
		}
		next = i + 1
	}
	if len(gotRows) != len(wantRows) {
		t.Errorf("rendered %d table rows, reference has %d", len(gotRows), len(wantRows))
	}
}

// The reference document also reproduces the reference report's prose, so
// the whole file is a regression guard for layout and spacing.
func TestReferenceReportWhole(t *testing.T) {
	want, err := os.ReadFile(referenceReport)
	if err != nil {
		t.Fatal(err)
	}
	got := renderReference(t)
	if !bytes.Equal(got, want) {
		t.Errorf("rendered reference differs from %s:\n%s", referenceReport, firstLineDiff(got, want))
	}
}

func indexFrom(rows []string, row string, from int) int {
	for i := from; i < len(rows); i++ {
		if rows[i] == row {
			return i
		}
	}
	return -1
}

// closestRow is the rendered row of the same table and transport, for the
// failure message.
func closestRow(rows []string, want string, from int) string {
	heading, line, _ := strings.Cut(want, "\n")
	first := strings.SplitN(line, " | ", 2)[0]
	for i := from; i < len(rows); i++ {
		h, l, _ := strings.Cut(rows[i], "\n")
		if h == heading && strings.SplitN(l, " | ", 2)[0] == first {
			return rows[i]
		}
	}
	return "(no row for this transport)"
}

// rowDiff names the cells that differ between two rows.
func rowDiff(want, got string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  want %q\n  got  %q\n", want, got)
	_, wl, _ := strings.Cut(want, "\n")
	_, gl, _ := strings.Cut(got, "\n")
	wc, gc := strings.Split(wl, " | "), strings.Split(gl, " | ")
	for i := 0; i < len(wc) && i < len(gc); i++ {
		if wc[i] != gc[i] {
			fmt.Fprintf(&b, "  cell %d: want %q, got %q\n", i, wc[i], gc[i])
		}
	}
	return b.String()
}

func firstLineDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("first difference at line %d:\n  want %q\n  got  %q", i+1, wl, gl)
		}
	}
	return "(lines equal; bytes differ)"
}
