package ci

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"math"
	"strings"
	"testing"

	goldenfile "github.com/twnsbench/twnsbench/internal/golden"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/verdict"
)

// abPairs makes rounds with A = a and B = a·ratio[i].
func abPairs(a float64, ratios ...float64) []verdict.Pair {
	var ps []verdict.Pair
	for i, r := range ratios {
		ps = append(ps, verdict.Pair{Round: i + 1, A: a * (1 + float64(i%3)/100), B: a * r})
	}
	return ps
}

// fixedVerdicts are one cell of each kind as a run records them, with
// their numbers set by hand (the formats are tested here, not the
// statistics); the medians are the pairs'.
func fixedVerdicts() []results.Verdict {
	var vs []results.Verdict
	for _, r := range fixedResults() {
		vs = append(vs, r.Record())
	}
	return vs
}

func fixedResults() []verdict.Result {
	nan := math.NaN()
	return []verdict.Result{
		{Cell: verdict.Cell{Transport: "tw", Condition: "lan", Instrument: "iperf3-1", Metric: "value", Unit: "Gbit/s",
			Better: results.BetterHigher, Pairs: abPairs(1.5, 0.84, 0.85, 0.86, 0.84, 0.85, 0.86, 0.84, 0.85, 0.86, 0.84, 0.85, 0.86)},
			PairCounts: verdict.PairCounts{N: 12}, Change: verdict.Change{Ratio: 0.8545, Lo: 0.8298, Hi: 0.8799}, Significance: verdict.Significance{P: 0.000488, Q: 0.00146}, MDE: 0.031,
			Verdict: verdict.Slower, Reason: "q 0.0015, confirmed on the last 6 pairs"},
		{Cell: verdict.Cell{Transport: "tw", Condition: "wan", Instrument: "tcp_rr", Metric: "p50_us", Unit: "µs",
			Better: results.BetterLower, Pairs: append(abPairs(20000, 1.01, 0.97, 1.05, 0.99, 1.08, 0.95, 1.02, 1.0, 0.96, 1.04, 1.03, 0.98),
				verdict.Pair{Round: 13, A: 20000, B: 19000, BCensored: true})}, // a bound short of A: its sign unknown
			PairCounts: verdict.PairCounts{N: 12, Censored: 1}, Change: verdict.Change{Ratio: 1.005, Lo: 0.975, Hi: 1.035}, Significance: verdict.Significance{P: 0.62, Q: 0.62}, MDE: 0.071,
			Verdict: verdict.Undecided, Reason: "not significant (q 0.62), interval wider than ±5 %"},
		{Cell: verdict.Cell{Transport: "tw", Condition: "lan", Instrument: "tcp_rr", Metric: "trans_s", Unit: "1/s",
			Better: results.BetterHigher, Pairs: abPairs(45000, 1.0, 1.01, 0.99, 1.0, 1.01, 0.99, 1.0, 1.01, 0.99, 1.0, 1.01, 0.99)},
			PairCounts: verdict.PairCounts{N: 12}, Change: verdict.Change{Ratio: 0.995, Lo: 0.985, Hi: 1.006}, Significance: verdict.Significance{P: 0.5, Q: 0.6}, MDE: 0.012,
			Verdict: verdict.NoChange, Reason: "interval within ±5 %"},
		{Cell: verdict.Cell{Transport: "tw", Condition: "lan", Instrument: "scp", Metric: "wall_s", Unit: "s",
			Better: results.BetterLower, Pairs: abPairs(2.5, 0.8, 0.79, 0.81, 0.8, 0.79, 0.81, 0.8, 0.79, 0.81, 0.8, 0.79, 0.81)},
			PairCounts: verdict.PairCounts{N: 12}, Change: verdict.Change{Ratio: 0.7929, Lo: 0.78, Hi: 0.80}, Significance: verdict.Significance{P: 0.000488, Q: 0.00146}, MDE: 0.02,
			Verdict: verdict.Faster, Reason: "q 0.0015, confirmed on the last 6 pairs"},
		{Cell: verdict.Cell{Transport: "tw", Condition: "loss", Instrument: "iperf3-1", Metric: "value", Unit: "Gbit/s",
			Better: results.BetterHigher, Pairs: []verdict.Pair{{Round: 1, A: 0.2, B: 0.3, ACensored: true}}},
			PairCounts: verdict.PairCounts{Censored: 1}, Change: verdict.Change{Ratio: nan, Lo: nan, Hi: nan}, Significance: verdict.Significance{P: nan, Q: nan}, MDE: nan,
			Verdict: verdict.Undecided, Reason: "0 pairs: too few for an interval"},
	}
}

func fixedABRun() ABRun {
	return ABRun{A: "tw@old", B: "tw@new", Options: verdict.Options{MinEffect: 0.05, Alpha: 0.05},
		Versions: results.Facts{
			{Key: "tw@old", Label: "tw@old", Value: "tw 2.0.1, sha256 9f86d081884c7d65"},
			{Key: "tw@new", Label: "tw@new", Value: "tw 2.1.0-dev (a1b2c3d), sha256 60303ae22b998861"},
			{Key: "twnsbench", Label: "twnsbench", Value: "v0.9.0 (e4f5a6b)"},
		},
		Environment: results.Facts{
			{Key: "kernel", Label: "Kernel", Value: "6.1.0-27-amd64"},
			{Key: "cpu", Label: "CPU", Value: "AMD EPYC 7B13, 2 cores online"},
		}}
}

var update = flag.Bool("update", false, "rewrite testdata/verdict-*.golden.* from the current writers")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got, *update, "go test ./nsbench/report/ci/ -run TestVerdictGolden -update")
}

func TestVerdictGolden(t *testing.T) {
	rs := fixedVerdicts()
	var ann, sum, junit, bmf, bigger, smaller bytes.Buffer
	for _, err := range []error{
		WriteGitHubAnnotations(&ann, rs),
		WriteStepSummary(&sum, rs, fixedABRun()),
		WriteJUnit(&junit, rs),
		WriteBMF(&bmf, rs),
		WriteActionBenchmark(&bigger, rs, results.BetterHigher),
		WriteActionBenchmark(&smaller, rs, results.BetterLower),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "verdict-annotations.golden.txt", ann.Bytes())
	golden(t, "verdict-summary.golden.md", sum.Bytes())
	golden(t, "verdict-junit.golden.xml", junit.Bytes())
	golden(t, "verdict-bmf.golden.json", bmf.Bytes())
	golden(t, "verdict-action-bigger.golden.json", bigger.Bytes())
	golden(t, "verdict-action-smaller.golden.json", smaller.Bytes())

	// What the golden files must show, stated so a failure names it.
	if lines := strings.Split(strings.TrimSpace(ann.String()), "\n"); len(lines) != 3 ||
		!strings.HasPrefix(lines[0], "::error title=tw · lan · iperf3-1%3A slower::B/A 0.855 (interval 0.830 to 0.880), -14.5 %25 over 12 pairs") ||
		!strings.HasPrefix(lines[1], "::warning title=tw · wan · tcp_rr · p50_us%3A undecided::") {
		t.Errorf("annotations: want an error for the slower cell and a warning per undecided one, got\n%s", ann.String())
	}
	if !strings.Contains(sum.String(), "| tw · lan · iperf3-1 | Gbit/s | 1.52 | 1.27 | -14.5 % (-17.0 to -12.0) | 3.1 % | 12 | **slower**: q 0.0015, confirmed on the last 6 pairs |") ||
		!strings.Contains(sum.String(), "| tw · loss · iperf3-1 | Gbit/s | — | — | — | — | 0 (+1 censored) |") {
		t.Errorf("summary table rows are not as expected:\n%s", sum.String())
	}
	var bmfDoc map[string]map[string]map[string]float64
	if err := json.Unmarshal(bmf.Bytes(), &bmfDoc); err != nil {
		t.Fatal(err)
	}
	if _, ok := bmfDoc["tw/loss/iperf3-1"]; ok {
		t.Errorf("BMF has the cell with no usable pair: %v", bmfDoc["tw/loss/iperf3-1"])
	}
	if m := bmfDoc["tw/lan/iperf3-1"]["B/A"]; m["value"] != 0.8545 || m["lower_value"] != 0.8298 || m["upper_value"] != 0.8799 {
		t.Errorf("BMF B/A of the slower cell: %v", m)
	}
}

// TestVerdictFormatsEscapeHostileNames: names with line breaks, workflow
// command markers and XML or HTML specials cannot add an annotation, break
// a table row, or change what the XML and JSON say.
func TestVerdictFormatsEscapeHostileNames(t *testing.T) {
	hostile := "tw\n::error title=pwned::x%0A <b>&\"'</b>, a:b|c"
	rs := fixedVerdicts()[:2]
	for i := range rs {
		rs[i].Transport = hostile
		rs[i].Reason = "why\r\n::warning::injected"
	}
	var ann bytes.Buffer
	if err := WriteGitHubAnnotations(&ann, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(ann.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d annotation lines for 2 cells:\n%s", len(lines), ann.String())
	}
	for _, l := range lines {
		cmd, rest, _ := strings.Cut(l, " title=")
		title, msg, ok := strings.Cut(rest, "::")
		if (cmd != "::error" && cmd != "::warning") || !ok || strings.ContainsAny(title, ":,\r\n") ||
			!strings.Contains(title, "%0A%3A%3Aerror title=pwned%3A%3Ax%250A") || !strings.Contains(msg, "why%0D%0A::warning::injected") {
			t.Errorf("annotation not escaped: %q", l)
		}
	}

	var sum bytes.Buffer
	if err := WriteStepSummary(&sum, rs, ABRun{A: "a\n# b", B: "<i>"}); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, l := range strings.Split(sum.String(), "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| Cell") {
			rows++
		}
		if strings.HasPrefix(l, "# b") {
			t.Errorf("a name started a heading: %q", l)
		}
	}
	if rows != 2 || strings.Contains(sum.String(), "<b>") || strings.Contains(sum.String(), "<i>") ||
		!strings.Contains(sum.String(), `&lt;b&gt;&amp;"'&lt;/b&gt;, a:b\|c`) {
		t.Errorf("summary not escaped (%d rows):\n%s", rows, sum.String())
	}

	var junit bytes.Buffer
	if err := WriteJUnit(&junit, rs); err != nil {
		t.Fatal(err)
	}
	var suite junitSuite
	if err := xml.Unmarshal(junit.Bytes(), &suite); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, junit.String())
	}
	if len(suite.Cases) != 2 || suite.Cases[0].ClassName != hostile || suite.Failures != 1 || suite.Skipped != 1 {
		t.Errorf("JUnit does not read back the names: %+v", suite)
	}

	var bmf bytes.Buffer
	if err := WriteBMF(&bmf, rs); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(bmf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc[hostile+"/lan/iperf3-1"]; !ok || len(doc) != 2 {
		t.Errorf("BMF keys do not read back: %v", doc)
	}
}

// TestVerdictDifferenceCell: a cell decided on B − A (rrul's latency
// increase) states the difference in its unit, never a ratio, in the CI
// formats (the report's table: report's TestVerdictDifferenceTableCells).
func TestVerdictDifferenceCell(t *testing.T) {
	nan := math.NaN()
	r := verdict.Result{Cell: verdict.Cell{Transport: "tw", Condition: "lan", Instrument: "rrul", Metric: "value", Unit: "ms", Better: results.BetterLower},
		Scale: verdict.ScaleDifference, PairCounts: verdict.PairCounts{N: 12, Bounded: 2}, MDE: 0.8,
		Change:  verdict.Change{Ratio: nan, Lo: nan, Hi: nan, Delta: 3.2, DeltaLo: 1.05, DeltaHi: 5.5},
		Verdict: verdict.Slower}
	c := abCells([]results.Verdict{r.Record()})[0]
	if got, want := c.sentence(), "B − A +3.20 ms (interval +1.05 to +5.50) over 12 pairs; smallest detectable change 0.800 ms"; got != want {
		t.Errorf("sentence %q, want %q", got, want)
	}
	if got, want := c.changeWithInterval(), "+3.20 ms (+1.05 to +5.50)"; got != want {
		t.Errorf("change %q, want %q", got, want)
	}
}

// TestStepSummaryOwnMinEffect: the step summary names a cell decided with
// its metric's own min effect beside the run's.
func TestStepSummaryOwnMinEffect(t *testing.T) {
	rs := fixedVerdicts()
	for i := range rs {
		rs[i].MinEffect = 0.05
	}
	var sum bytes.Buffer
	if err := WriteStepSummary(&sum, rs, fixedABRun()); err != nil {
		t.Fatal(err)
	}
	if s := sum.String(); !strings.Contains(s, "at least 5 %,") || strings.Contains(s, "its metric's own") {
		t.Errorf("summary of cells at the run's min effect:\n%s", s)
	}
	rs[0].Instrument, rs[0].Metric, rs[0].MinEffect = "iperf3-instr", "value", 0.02
	sum.Reset()
	if err := WriteStepSummary(&sum, rs, fixedABRun()); err != nil {
		t.Fatal(err)
	}
	if want := "at least 5 % (iperf3-instr/value 2 %, its metric's own), and confirmed"; !strings.Contains(sum.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, sum.String())
	}
}
