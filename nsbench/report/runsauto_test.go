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
