package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The RPM cross-check's text: medians of the pairs, the ratio to both of
// goresponsiveness's figures, and only the differences the figures show;
// a skipped check says why.
func TestRPMCrossText(t *testing.T) {
	run := func(ours, theirs, draft, oSelf, tSelf float64, stable bool) results.RPMCrossRun {
		return results.RPMCrossRun{Ours: ours, Theirs: theirs, TheirsDraft: draft, OursSelfMs: oSelf, TheirsSelfMs: tSelf,
			OursForeignMs: 18, TheirsForeignMs: 18.5, OursMbps: 4800, TheirsMbps: 1350, TheirsStable: stable}
	}
	c := &results.RPMCrossCheck{Tool: "/x/networkQuality", Args: "-rpm.mnp 4", Connections: 4, LimitSec: 10, Runs: []results.RPMCrossRun{
		run(2650, 906, 985, 30, 85, false), run(2000, 1000, 1100, 28, 80, true), run(3000, 800, 900, 32, 90, false),
	}}
	got := rpmCrossText(c)
	for _, want := range []string{
		"3 pairs", "at most 4 load-generating connections per direction, limit 10 s",
		"RPM (medians): twnsbench 2650, goresponsiveness 906 by its own formula",
		"985 by the draft's",
		"apart: twnsbench/goresponsiveness 2.92 (2.69 against the draft's formula of its means; pair by pair 1.82–3.33)",
		"self twnsbench 30.0, goresponsiveness 85.0; foreign per round trip 18.0, 18.5; load goodput (Mbit/s, both directions) 4800, 1350",
		"its self probes (on the load-generating connections) took 2.83× ours",
		"its load moved 0.28× our goodput",
		"in 2 of 3 runs goresponsiveness's throughput never became stable",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	for _, not := range []string{"foreign probes (new connections) took", "agree"} {
		if strings.Contains(got, not) {
			t.Errorf("%q, which the figures do not show, in:\n%s", not, got)
		}
	}
	skipped := rpmCrossText(&results.RPMCrossCheck{Skipped: "goresponsiveness not found"})
	if skipped != "rpm cross-check: skipped: goresponsiveness not found\n" {
		t.Errorf("skipped: %q", skipped)
	}
}
