package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The narrow path's table: each verdict in words, its evidence, and no
// section without a narrow hop.
func TestNarrowPathSection(t *testing.T) {
	d := wanDoc()
	if strings.Contains(string(Markdown(d)), "## Narrow path") {
		t.Fatal("a document without a narrow hop has a Narrow path section")
	}
	d.Verification[0].Narrow = &results.NarrowPath{MTU: 1280, Verdict: "survives", How: "pmtu discovery", BulkCompleted: 2,
		Row: results.NarrowCounts{TooBig: 3, ICMPSent: 3}, Block: &results.NarrowCounts{TooBig: 9, ICMPSent: 9, MaxPassed: 1280}}
	d.Verification[1].Narrow = &results.NarrowPath{MTU: 1280, ICMPDropped: true, Verdict: "black hole", How: "stall", BulkCompleted: 1,
		BulkStalled: 1, Stall: "scp: no result 10 s after 64 MiB"}
	md := string(Markdown(d))
	// A transport that got through at a sliver of its LAN rate collapses.
	collapsed := *d.Verification[1].Narrow
	collapsed.ICMPDropped, collapsed.Verdict, collapsed.How, collapsed.BulkStalled, collapsed.Stall, collapsed.RateRatio = false, "collapses", "fragmentation", 0, "", 0.0052
	if got := narrowVerdictText(&collapsed); got != "**collapses** (fragmentation, at 0.52 % of its LAN rate)" {
		t.Errorf("collapse verdict %q", got)
	}
	for _, want := range []string{
		"| Pure SSH | wan | MTU 1280 | survives (pmtu discovery) | 2 / 0 | 0.06 | 3 / 3 / 0 | 9 / 9 / 1280 | — |",
		"| SSH over WireGuard | wan | MTU 1280, ICMP dropped | **black hole** | 1 / 1 | 0.05 | 0 / 0 / 0 | — | scp: no result 10 s after 64 MiB |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing row %q in:\n%s", want, md[strings.Index(md, "## Narrow path"):])
		}
	}
}
