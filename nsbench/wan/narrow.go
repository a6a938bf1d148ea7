package wan

import (
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// A narrow hop's verdict per transport: its bulk transfers (iperf3, scp)
// in the cell, each completed sample with the hop's counts over it (the
// narrow_* extras), each stalled one a failure with the hop's counts over
// it (Failure.Narrow), judged by impair.JudgeNarrow.

// The extras a sample under a narrow hop carries: the hop's counts over
// the sample.
const (
	extraNarrowTooBig     = "narrow_too_big"
	extraNarrowICMPSent   = "narrow_icmp_sent"
	extraNarrowFragmented = "narrow_fragmented"
	extraNarrowSuppressed = "narrow_icmp_suppressed"
)

// NarrowExtras are the hop's counts over a sample, d, as its extras.
func NarrowExtras(d impair.NarrowCounts) map[string]float64 {
	return map[string]float64{extraNarrowTooBig: float64(d.TooBig), extraNarrowICMPSent: float64(d.ICMPSent),
		extraNarrowFragmented: float64(d.Fragmented), extraNarrowSuppressed: float64(d.ICMPSuppressed)}
}

// isBulk reports whether instrument moves bulk data over one connection
// or a few: a transfer a black hole stalls.
func isBulk(instrument string) bool {
	return strings.HasPrefix(instrument, "iperf3-") || instrument == "scp"
}

// narrowEvidence gathers transport's bulk transfers under cond from doc,
// and the first stalled one's error.
func narrowEvidence(doc *results.Document, transport, cond string, hop impair.NarrowHop) (impair.NarrowEvidence, string) {
	e := impair.NarrowEvidence{Hop: hop}
	for _, s := range doc.Samples {
		if s.Transport != transport || s.Condition != cond || !isBulk(s.Instrument) {
			continue
		}
		e.Completed++
		e.Counts.TooBig += uint64(s.Extra[extraNarrowTooBig])
		e.Counts.ICMPSent += uint64(s.Extra[extraNarrowICMPSent])
		e.Counts.Fragmented += uint64(s.Extra[extraNarrowFragmented])
		e.Counts.ICMPSuppressed += uint64(s.Extra[extraNarrowSuppressed])
	}
	lan, _ := CellMedian(doc, transport, results.LAN, "iperf3-1")
	narrow, okHop := CellMedian(doc, transport, cond, "iperf3-1")
	if ref, againstCap, ok := impair.RateReference(lan, capGbps(doc, cond)); ok && okHop {
		e.RateRatio, e.AgainstCap = narrow/ref, againstCap
	}
	stall := ""
	for _, f := range doc.Failures {
		if f.Transport != transport || f.Condition != cond || !isBulk(f.Instrument) {
			continue
		}
		e.Stalled++
		if f.Narrow != nil {
			e.FailedRecorded++
			e.Failed = e.Failed.Add(impairCounts(*f.Narrow))
		}
		if stall == "" {
			stall = f.Error
			if !strings.HasPrefix(stall, f.Instrument+":") {
				stall = f.Instrument + ": " + stall
			}
		}
	}
	return e, stall
}

// Evidence is transport's narrow-hop evidence under cond for its
// verdict: its bulk transfers in doc, with the hop's counts over its
// set-up and warm-ups, and the first stalled transfer's error.
func (w *Run) Evidence(doc *results.Document, transport, cond string, hop impair.NarrowHop) (impair.NarrowEvidence, string) {
	e, stall := narrowEvidence(doc, transport, cond, hop)
	setUp, _ := w.setUpCounts(transport, cond)
	e.Counts = e.Counts.Add(setUp)
	return e, stall
}

// capGbps is cond's rate cap in Gbit/s (iperf3's unit), 0 without one.
func capGbps(doc *results.Document, cond string) float64 {
	for _, c := range doc.Conditions {
		if c.Name == cond && c.Profile != nil {
			return float64(c.Profile.RateBps) / 1e9
		}
	}
	return 0
}

// narrowRecord is the verdict's record: the evidence, the verdict, and the
// block's counts (nil when unread).
func narrowRecord(e impair.NarrowEvidence, stall string, block *impair.NarrowCounts) *results.NarrowPath {
	v := impair.JudgeNarrow(e)
	verdict := "survives"
	switch {
	case v.BlackHole():
		verdict = "black hole"
	case v.Collapsed:
		verdict = "collapses"
	case v.How == impair.NarrowNotHop || v.How == impair.NarrowNotRecorded:
		verdict = v.How
	case !v.Survives:
		verdict = "unmeasured"
	}
	r := &results.NarrowPath{MTU: e.Hop.MTU, ICMPDropped: e.Hop.DropICMP, Verdict: verdict, How: v.How, Row: ResultCounts(e.Counts),
		NarrowBulk: results.NarrowBulk{BulkCompleted: e.Completed, BulkStalled: e.Stalled, Stall: stall},
		NarrowRate: results.NarrowRate{RateRatio: e.RateRatio}}
	if e.FailedRecorded > 0 {
		f := ResultCounts(e.Failed)
		r.Failed = &f
	}
	if e.RateRatio > 0 {
		r.RateAgainst = map[bool]string{true: "cap", false: "lan"}[e.AgainstCap]
	}
	if block != nil {
		b := ResultCounts(*block)
		r.Block = &b
	}
	return r
}

// ResultCounts are a narrow hop's counts as the results document keeps
// them.
func ResultCounts(c impair.NarrowCounts) results.NarrowCounts {
	return results.NarrowCounts{TooBig: c.TooBig, ICMPSent: c.ICMPSent, Fragmented: c.Fragmented,
		ICMPSuppressed: c.ICMPSuppressed, MaxPassed: c.MaxPassed}
}

func impairCounts(c results.NarrowCounts) impair.NarrowCounts {
	return impair.NarrowCounts{TooBig: c.TooBig, ICMPSent: c.ICMPSent, Fragmented: c.Fragmented,
		ICMPSuppressed: c.ICMPSuppressed, MaxPassed: c.MaxPassed}
}

// SetUpStalled is the verification record of a row whose path could not
// be set up under a narrow hop, with the set-up's error as its stall and
// the hop's counts over the attempt: a black hole when the hop dropped its
// packets meanwhile (an SSH key exchange whose packets the hop drops never
// ends), "failed, not the hop" when it dropped none. ok is false when c's
// condition has no narrow hop.
func (c *Cell) SetUpStalled(transport string, err error) (v results.Verification, ok bool) {
	cc := c.w.conds[c.cond.Name]
	if cc.Narrow.MTU == 0 {
		return v, false
	}
	counts, read := c.w.setUpCounts(transport, c.cond.Name)
	e := impair.NarrowEvidence{Hop: cc.Narrow, Stalled: 1, Counts: counts}
	if read {
		e.Failed, e.FailedRecorded = counts, 1
	}
	v = results.Verification{Transport: transport, Condition: c.cond.Name, Method: c.w.imp.Method(),
		ConfiguredRTTMs: ms(cc.RTT), ConfiguredLossPct: cc.LossPct, OK: true,
		Note:   "the path could not be set up under the narrow hop: nothing else was measured",
		Narrow: narrowRecord(e, "set-up: "+err.Error(), nil)}
	c.w.logf("%s / %s: narrow path (MTU %d): %s (%s): its set-up failed; too big %d, ICMP sent %d, suppressed %d",
		transport, c.cond.Name, cc.Narrow.MTU, v.Narrow.Verdict, v.Narrow.How, counts.TooBig, counts.ICMPSent, counts.ICMPSuppressed)
	return v, true
}

// CellMedian is the median value of a cell's samples so far (for the
// rate verdict: iperf3's goodput in Gbit/s).
func CellMedian(doc *results.Document, transport, condition, instrument string) (float64, bool) {
	var xs []float64
	for _, s := range doc.Samples {
		if s.Transport == transport && s.Condition == condition && s.Instrument == instrument {
			xs = append(xs, s.Value)
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	return stats.Summarize(xs).Median, true
}
