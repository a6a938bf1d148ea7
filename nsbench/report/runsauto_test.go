package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestRunsAutoStatesDifferencePrecision: the absolute precision a
// difference is held to is stated where the rule is, and so is that the
// time to ready is recorded once per path.
func TestRunsAutoStatesDifferencePrecision(t *testing.T) {
	d := twnsbenchDoc()
	d.Env.Runs = 6
	d.Env.RunsAuto = &results.RunsAuto{Precision: 0.05, PrecisionMs: 1.5, MaxRuns: 20}
	md := string(Markdown(d))
	for _, want := range []string{"within ±5 % of the median (a difference, rrul's latency increase, which can lie near 0: the wider of that and ±1.5 ms)",
		"the time to ready is recorded once per path"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// TestSpreadMarkSaysADifferenceHasNoCV: the Noise table's CV column is a
// dash for rrul's value, and the mark's explanation says why.
func TestSpreadMarkSaysADifferenceHasNoCV(t *testing.T) {
	if why := markWhy[results.MarkSpread]; !strings.Contains(why, "a difference, rrul's latency increase, whose mean can be 0, has none") {
		t.Errorf("spread mark: %q", why)
	}
}

// TestNoiseCensoredMark: under --runs auto a cell whose median interval
// ends at a lower bound (a censored rrul run) is listed as "censored" in
// the Noise table, with what that means, and counted under its mark.
func TestNoiseCensoredMark(t *testing.T) {
	d := rrulDoc()
	d.Env.Runs = 2
	d.Env.RunsAuto = &results.RunsAuto{Precision: 0.05, PrecisionMs: 1, MaxRuns: 4}
	d.Instruments[0].Metrics[0].CensoredBy = results.CensoredWaitMs
	d.Cells = results.Cells(d)
	md := string(Markdown(d))
	for _, want := range []string{
		"- censored: --runs auto: a run's reading is a lower bound",
		"| wan | SSH over tw | rrul | 2 of 4 planned | — | — | — | censored, precision |",
		"2 of 2 cells are marked (1 spread, 1 censored, 2 precision).",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
