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
	d.Verification[0].Narrow = &results.NarrowPath{MTU: 1280, Verdict: "survives", How: "pmtu discovery",
		Row: results.NarrowCounts{TooBig: 3, ICMPSent: 3}, Block: &results.NarrowCounts{TooBig: 9, ICMPSent: 9, MaxPassed: 1280}, NarrowBulk: results.NarrowBulk{BulkCompleted: 2}}
	d.Verification[1].Narrow = &results.NarrowPath{MTU: 1280, ICMPDropped: true, Verdict: "black hole", How: "stall", Failed: &results.NarrowCounts{TooBig: 31, ICMPSuppressed: 31}, NarrowBulk: results.NarrowBulk{BulkCompleted: 1, BulkStalled: 1, Stall: "scp: no result 10 s after 64 MiB"}}
	md := string(Markdown(d))
	// A transport that got through at a sliver of its LAN rate collapses.
	collapsed := *d.Verification[1].Narrow
	collapsed.ICMPDropped, collapsed.Verdict, collapsed.How, collapsed.BulkStalled, collapsed.Stall, collapsed.RateRatio = false, "collapses", "fragmentation", 0, "", 0.0052
	collapsed.Failed = nil
	if got := narrowVerdictText(&collapsed, 0); got != "**collapses** (fragmentation, at 0.52 % of its LAN rate)" {
		t.Errorf("collapse verdict %q", got)
	}
	for _, want := range []string{
		"| Pure SSH | wan | MTU 1280 | survives (pmtu discovery) | 2 / 0 | 0.06 | 3 / 3 / 0 | 9 / 9 / 1280 | — |",
		"| SSH over WireGuard | wan | MTU 1280, ICMP dropped | **black hole** (during its failures the hop dropped 31 packets too big, sent 0 ICMP, suppressed 31) | 1 / 1 | 0.05 | 0 / 0 / 0 | — | scp: no result 10 s after 64 MiB |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing row %q in:\n%s", want, md[strings.Index(md, "## Narrow path"):])
		}
	}
}

// A verdict names its evidence, and a document without the evidence (one
// written before it was kept) reads "not recorded", never a verdict: a
// black hole without the hop's counts during its failures, a collapse
// under a rate cap compared with the LAN's rate.
func TestNarrowVerdictEvidence(t *testing.T) {
	const notKept = "not recorded (failed; the hop's counts during the failure were not kept)"
	for _, tc := range []struct {
		name   string
		n      results.NarrowPath
		capBps uint64
		want   string
	}{
		{"a black hole from an older document", results.NarrowPath{Verdict: "black hole", How: "stall", NarrowBulk: results.NarrowBulk{BulkStalled: 1}}, 0, notKept},
		{"not recorded", results.NarrowPath{Verdict: "not recorded", How: "not recorded", NarrowBulk: results.NarrowBulk{BulkStalled: 1}}, 0, notKept},
		{"failed, not the hop", results.NarrowPath{Verdict: "failed, not the hop", How: "failed, not the hop",
			Failed: &results.NarrowCounts{}, NarrowBulk: results.NarrowBulk{BulkStalled: 1}}, 0, "failed, not the hop (during its failures the hop dropped 0 packets too big, sent 0 ICMP, suppressed 0)"},
		{"a black hole with ICMP sent", results.NarrowPath{Verdict: "black hole", How: "stall",
			Failed: &results.NarrowCounts{TooBig: 12, ICMPSent: 12}, NarrowBulk: results.NarrowBulk{BulkStalled: 2}}, 0, "**black hole** (during its failures the hop dropped 12 packets too big, sent 12 ICMP, suppressed 0)"},
		{"collapses against the cap", results.NarrowPath{Verdict: "collapses", How: "pmtu discovery", NarrowRate: results.NarrowRate{RateRatio: 0.075, RateAgainst: "cap"}},
			20e6, "**collapses** (pmtu discovery, at 7.50 % of the condition's rate cap, 20 Mbit/s)"},
		{"a collapse under a cap from an older document", results.NarrowPath{Verdict: "collapses", How: "pmtu discovery", NarrowRate: results.NarrowRate{RateRatio: 0.0095}},
			20e6, "not recorded (its rate was compared with its LAN rate, not the condition's cap)"},
		{"collapses against the LAN", results.NarrowPath{Verdict: "collapses", How: "fragmentation", NarrowRate: results.NarrowRate{RateRatio: 0.0052, RateAgainst: "lan"}},
			0, "**collapses** (fragmentation, at 0.52 % of its LAN rate)"},
	} {
		if got := narrowVerdictText(&tc.n, tc.capBps); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// The cap comes from the condition's profile.
	d := wanDoc()
	d.Conditions[1].Profile = &results.Profile{Spec: "30ms:0%:rate=20mbit:mtu=1400", RTTMs: 30, RateBps: 20e6}
	d.Verification[0].Narrow = &results.NarrowPath{MTU: 1400, Verdict: "collapses", How: "pmtu discovery", NarrowBulk: results.NarrowBulk{BulkCompleted: 1}, NarrowRate: results.NarrowRate{RateRatio: 0.075, RateAgainst: "cap"}}
	if md := string(Markdown(d)); !strings.Contains(md, "| **collapses** (pmtu discovery, at 7.50 % of the condition's rate cap, 20 Mbit/s) |") {
		t.Errorf("the cap's collapse is missing from:\n%s", md[strings.Index(md, "## Narrow path"):])
	}
}
