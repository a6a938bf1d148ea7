package wan

import (
	"errors"
	"math"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The narrow hop's verdict per row from a document: its bulk samples'
// counts (others' and other conditions' not), its stalls.
func TestNarrowEvidenceFromDocument(t *testing.T) {
	hop := impair.NarrowHop{MTU: 1280}
	doc := &results.Document{
		Samples: []results.Sample{
			{Transport: "ssh", Condition: "wan", Instrument: "iperf3-1", Value: 1, Extra: map[string]float64{extraNarrowTooBig: 2, extraNarrowICMPSent: 2}},
			{Transport: "ssh", Condition: "wan", Instrument: "scp", Extra: map[string]float64{extraNarrowTooBig: 1, extraNarrowICMPSent: 1}},
			{Transport: "ssh", Condition: "wan", Instrument: "tcp_rr", Extra: map[string]float64{extraNarrowTooBig: 50}},
			{Transport: "ssh", Condition: "lan", Instrument: "iperf3-1", Value: 2, Extra: map[string]float64{extraNarrowTooBig: 70}},
			{Transport: "wg2", Condition: "lan", Instrument: "iperf3-1", Value: 0.4},
			{Transport: "wg2", Condition: "wan", Instrument: "iperf3-1", Value: 0.0004, Extra: map[string]float64{extraNarrowFragmented: 35}},
			{Transport: "wireguard-go", Condition: "wan", Instrument: "iperf3-1", Extra: map[string]float64{extraNarrowTooBig: 9, extraNarrowICMPSent: 9}},
		},
		Failures: []results.Failure{{Transport: "wireguard-go", Condition: "wan", Instrument: "scp", Error: "scp: no result 10 s after 64 MiB",
			Narrow: &results.NarrowCounts{TooBig: 31, ICMPSent: 31}}},
	}
	e, stall := narrowEvidence(doc, "ssh", "wan", hop)
	if e.Completed != 2 || e.Stalled != 0 || e.Counts.TooBig != 3 || e.Counts.ICMPSent != 3 || stall != "" {
		t.Errorf("ssh: %+v %q, want 2 completed, 3 too big, 3 ICMP, no stall", e, stall)
	}
	if r := narrowRecord(e, stall, nil); r.Verdict != "survives" || r.How != impair.NarrowPMTUD || r.Row.TooBig != 3 || r.Block != nil || r.RateRatio != 0.5 {
		t.Errorf("ssh: record %+v, want survives at half its LAN rate", r)
	}
	// Through at a thousandth of its LAN rate: it collapses.
	e, stall = narrowEvidence(doc, "wg2", "wan", hop)
	if r := narrowRecord(e, stall, nil); r.Verdict != "collapses" || r.How != impair.NarrowFragmentation || r.RateRatio != 0.001 {
		t.Errorf("wg2: record %+v, want collapses (fragmentation) at 0.001", r)
	}
	e, stall = narrowEvidence(doc, "wireguard-go", "wan", hop)
	r := narrowRecord(e, stall, &impair.NarrowCounts{TooBig: 40, ICMPSent: 40, MaxPassed: 1280})
	if r.Verdict != "black hole" || r.How != impair.NarrowStall || r.BulkStalled != 1 || r.Stall != "scp: no result 10 s after 64 MiB" ||
		r.Block == nil || r.Block.MaxPassed != 1280 || r.Failed == nil || r.Failed.TooBig != 31 || r.Failed.ICMPSent != 31 {
		t.Errorf("wireguard-go: record %+v", r)
	}
}

// A failed bulk sample is the narrow hop's only when the hop dropped its
// packets during it: with none dropped and no ICMP it failed, not at the
// hop; with drops, a black hole naming them; without the hop's counts (a
// document from before they were kept), not recorded.
func TestNarrowVerdictNeedsTheHopsDrops(t *testing.T) {
	hop := impair.NarrowHop{MTU: 1280, DropICMP: true}
	doc := func(failed *results.NarrowCounts) *results.Document {
		return &results.Document{
			Samples: []results.Sample{
				{Transport: "ssh", Condition: "wan", Instrument: "iperf3-1", Value: 1, Extra: map[string]float64{extraNarrowTooBig: 4}},
				{Transport: "ssh", Condition: "lan", Instrument: "iperf3-1", Value: 2},
			},
			Failures: []results.Failure{{Transport: "ssh", Condition: "wan", Instrument: "scp", Error: "scp: no result 10 s after 64 MiB",
				Narrow: failed}},
		}
	}
	for _, tc := range []struct {
		name    string
		failed  *results.NarrowCounts
		verdict string
	}{
		{"nothing dropped, no ICMP", &results.NarrowCounts{}, "failed, not the hop"},
		{"drops during the sample", &results.NarrowCounts{TooBig: 12, ICMPSuppressed: 12}, "black hole"},
		{"counts not recorded", nil, "not recorded"},
	} {
		e, stall := narrowEvidence(doc(tc.failed), "ssh", "wan", hop)
		r := narrowRecord(e, stall, &impair.NarrowCounts{TooBig: 40})
		if r.Verdict != tc.verdict || r.BulkStalled != 1 {
			t.Errorf("%s: verdict %q (%+v), want %q", tc.name, r.Verdict, r, tc.verdict)
		}
		if (r.Failed == nil) != (tc.failed == nil) || r.Failed != nil && *r.Failed != *tc.failed {
			t.Errorf("%s: failed counts %+v, want %+v", tc.name, r.Failed, tc.failed)
		}
	}
}

// A condition with a rate cap compares the rate through the hop with the
// cap, not the LAN: near 20 Mbit/s under rate=20mbit:mtu=1400 survives
// although the LAN gives 2 Gbit/s; under a tenth of the cap collapses,
// against the cap.
func TestNarrowCollapseAgainstTheCap(t *testing.T) {
	hop := impair.NarrowHop{MTU: 1400}
	doc := func(gbps float64) *results.Document {
		return &results.Document{
			Conditions: []results.Condition{{Name: "lan"},
				{Name: "wan", Profile: &results.Profile{Spec: "30ms:0%:rate=20mbit:mtu=1400", RTTMs: 30, RateBps: 20e6}}},
			Samples: []results.Sample{
				{Transport: "ssh", Condition: "lan", Instrument: "iperf3-1", Value: 2},
				{Transport: "ssh", Condition: "wan", Instrument: "iperf3-1", Value: gbps, Extra: map[string]float64{extraNarrowTooBig: 3, extraNarrowICMPSent: 3}},
			},
		}
	}
	e, stall := narrowEvidence(doc(0.019), "ssh", "wan", hop)
	if r := narrowRecord(e, stall, nil); r.Verdict != "survives" || r.How != impair.NarrowPMTUD || r.RateAgainst != "cap" || math.Abs(r.RateRatio-0.95) > 1e-9 {
		t.Errorf("19 Mbit/s under a 20 Mbit/s cap: %+v, want survives at 0.95 of the cap", r)
	}
	e, stall = narrowEvidence(doc(0.0015), "ssh", "wan", hop)
	if r := narrowRecord(e, stall, nil); r.Verdict != "collapses" || r.RateAgainst != "cap" || math.Abs(r.RateRatio-0.075) > 1e-9 {
		t.Errorf("1.5 Mbit/s under a 20 Mbit/s cap: %+v, want collapses at 0.075 of the cap", r)
	}
	// Without the cap, the LAN is the reference.
	d := doc(0.019)
	d.Conditions[1].Profile.RateBps = 0
	e, stall = narrowEvidence(d, "ssh", "wan", hop)
	if r := narrowRecord(e, stall, nil); r.Verdict != "collapses" || r.RateAgainst != "lan" || math.Abs(r.RateRatio-0.0095) > 1e-9 {
		t.Errorf("19 Mbit/s, no cap, 2 Gbit/s LAN: %+v, want collapses at 0.0095 of the LAN", r)
	}
}

// A set-up span whose hop counts cannot be read (the forwarder does not
// answer) is marked unread, so its zero counts are not taken for "the
// hop dropped nothing"; a condition without a narrow hop marks nothing.
func TestNarrowSpanUnread(t *testing.T) {
	w := &Run{conds: map[string]impair.Condition{
		"wan1": {Narrow: impair.NarrowHop{MTU: 1280}}, "wan2": {RTT: 30e6}},
		imp: impair.NewUserspace(impair.UserspaceConfig{}), logf: t.Logf}
	ran := 0
	for _, cond := range []string{"wan1", "wan2"} {
		if err := w.NarrowSpan(t.Context(), cond, "ssh", func() error { ran++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, read := w.setUpCounts("ssh", "wan1"); read || ran != 2 {
		t.Errorf("wan1: read %v, ran %d: want unread, both spans run", read, ran)
	}
	if _, read := w.setUpCounts("ssh", "wan2"); !read {
		t.Error("wan2 (no narrow hop) marked unread")
	}
}

// A row whose path cannot come up under a narrow hop is a black hole, its
// set-up's error the stall; without a narrow hop there is no record.
func TestNarrowSetUpStalled(t *testing.T) {
	w := &Run{conds: map[string]impair.Condition{
		"wan1": {Narrow: impair.NarrowHop{MTU: 1280, DropICMP: true}}, "wan2": {RTT: 30e6}},
		imp: impair.NewUserspace(impair.UserspaceConfig{}), logf: t.Logf,
		setUp: setUpSpans{counts: map[string]impair.NarrowCounts{"ssh/wan1": {TooBig: 14}}}}
	c := &Cell{w: w, cond: results.Condition{Name: "wan1"}}
	v, ok := c.SetUpStalled("ssh", errors.New("no SSH exchange through the path"))
	if !ok || v.Narrow == nil || v.Narrow.Verdict != "black hole" || v.Narrow.Row.TooBig != 14 ||
		v.Narrow.Failed == nil || v.Narrow.Failed.TooBig != 14 ||
		v.Narrow.Stall != "set-up: no SSH exchange through the path" || v.Transport != "ssh" {
		t.Errorf("%v %+v %+v", ok, v, v.Narrow)
	}
	// A set-up that failed while the hop dropped nothing of it failed for
	// another reason.
	w.setUp.counts["ssh/wan1"] = impair.NarrowCounts{}
	if v, ok := c.SetUpStalled("ssh", errors.New("no SSH exchange through the path")); !ok || v.Narrow.Verdict != "failed, not the hop" ||
		v.Narrow.Failed == nil || v.Narrow.Failed.TooBig != 0 {
		t.Errorf("a set-up failure without drops: %v %+v", ok, v.Narrow)
	}
	// Counts that could not be read are no evidence either way.
	w.setUp.unread = map[string]bool{"ssh/wan1": true}
	if v, ok := c.SetUpStalled("ssh", errors.New("no SSH exchange through the path")); !ok || v.Narrow.Verdict != "not recorded" || v.Narrow.Failed != nil {
		t.Errorf("a set-up failure without its counts: %v %+v", ok, v.Narrow)
	}
	c.cond.Name = "wan2"
	if _, ok := c.SetUpStalled("ssh", errors.New("x")); ok {
		t.Error("a record without a narrow hop")
	}
}
