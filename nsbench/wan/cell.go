package wan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// Cell is one WAN block's condition, from Set to Clear: what the
// impairment holds, what was probed of it before the cells, and the
// verdicts after them. It writes nothing: End returns what it measured,
// and the cell loop records it.
//
//	Set → (paths up) → Probe → (cells; Check after a failed sample) → End → Clear
type Cell struct {
	w       *Run
	cond    results.Condition
	rows    string // the block's transports, for messages
	applied []impair.Applied
	probed  wanProbe
	// before is the impairment's counters when the cells began (again
	// after Check set the condition anew).
	before    []impair.Counters
	beforeErr error
	// narrowBefore is the narrow hop's counts when the cells began; nil
	// without a narrow hop.
	narrowBefore *impair.NarrowCounts
}

// wanProbe is what a WAN block measured of its condition before its
// cells: the RTT, and the end-to-end loss with the impairment's counters
// over the loss probe (its fallback).
type wanProbe struct {
	rtt     impair.RTT
	rttErr  error
	loss    impair.EndToEnd
	lossErr error
	during  []impair.Counters // over the loss probe; nil when unread
}

// Outcome is what a WAN cell measured: the impairment's counters of the
// block and one verification per transport.
type Outcome struct {
	Diagnostics   []results.Diagnostic
	Verifications []results.Verification
}

// Set applies cond's impairment for the block of transports rows and
// returns the cell, to clear after the block; nil when the condition is
// not impaired (always, without a WAN).
func (w *Run) Set(ctx context.Context, cond results.Condition, rows []string) (*Cell, error) {
	if _, impaired := w.Impaired(cond.Name); !impaired {
		return nil, nil
	}
	c := &Cell{w: w, cond: cond, rows: strings.Join(rows, ", ")}
	applied, err := w.imp.Set(ctx, w.conds[cond.Name])
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s / %s: impairment: %w", c.rows, cond.Name, err), w.imp.Clear(ctx))
	}
	c.applied = applied
	if w.conds[cond.Name].Narrow.MTU > 0 {
		// Paths come up under the narrow hop knowing nothing of it.
		if err := w.flushPMTU(ctx); err != nil {
			return nil, errors.Join(fmt.Errorf("%s / %s: %w", c.rows, cond.Name, err), w.imp.Clear(ctx))
		}
	}
	return c, nil
}

// Cond is the cell's condition.
func (c *Cell) Cond() results.Condition { return c.cond }

// Clear removes the impairment again.
func (c *Cell) Clear(ctx context.Context) error {
	if err := c.w.imp.Clear(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("%s / %s: clear impairment: %w", c.rows, c.cond.Name, err)
	}
	if c.w.conds[c.cond.Name].Narrow.MTU > 0 {
		// Later cells must not inherit the narrow path's MTU either.
		if err := c.w.flushPMTU(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("%s / %s: %w", c.rows, c.cond.Name, err)
		}
	}
	return nil
}

// Probe measures the RTT and the loss end to end, and snapshots the
// impairment's counters, once the block's paths are up and before their
// warm-ups. The loss probe takes impair.LossProbeDuration plus about a
// round trip and 0.2 s.
func (c *Cell) Probe(ctx context.Context) {
	w := c.w
	cc := w.conds[c.cond.Name]
	count, gap := cc.Probes()
	c.probed.rtt, c.probed.rttErr = impair.ProbeRTTEvery(ctx, w.client, w.probe.Addr(), count, gap)
	pre, preErr := w.imp.Counters(ctx)
	c.probed.loss, c.probed.lossErr = w.probe.ProbeLoss(ctx, cc.LossProbe(), cc.RTT+2*cc.Jitter)
	c.before, c.beforeErr = w.imp.Counters(ctx)
	if n, ok := w.NarrowCounts(ctx, c.cond.Name); ok {
		c.narrowBefore = &n
	}
	if preErr == nil && c.beforeErr == nil {
		c.probed.during = impair.SubAll(c.before, pre)
	}
}

// impairmentCheckTimeout bounds the question to the WAN impairment.
const impairmentCheckTimeout = 5 * time.Second

// Check asks the impairment for its counters (the userspace forwarder
// answers on its control socket, a frozen or dead one does not) and sets
// the condition again when it cannot answer; it returns what was wrong
// ("" when nothing) and whether it was set again. The cell's counters then
// start again from the new forwarder's.
func (c *Cell) Check(ctx context.Context) (problem string, repaired bool) {
	w := c.w
	cctx, cancel := context.WithTimeout(ctx, impairmentCheckTimeout)
	_, err := w.imp.Counters(cctx)
	cancel()
	if err == nil {
		return "", false
	}
	problem = fmt.Sprintf("no answer (%v)", err)
	if _, serr := w.imp.Set(ctx, w.conds[c.cond.Name]); serr != nil {
		return fmt.Sprintf("%s; setting it again failed: %v", problem, serr), false
	}
	c.before, c.beforeErr = w.imp.Counters(ctx)
	return problem, true
}

// End reads the impairment's counters and judges the cell of every
// transport in names (goodput gives each one's iperf3-1 median so far, in
// Gbit/s). With several transports in the block the RTT probe and the
// counters are the block's, shared by all.
func (c *Cell) End(ctx context.Context, names []string, goodput func(transport string) (float64, bool),
	narrow func(transport string, hop impair.NarrowHop) (impair.NarrowEvidence, string)) Outcome {
	w := c.w
	after, afterErr := w.imp.Counters(ctx)
	var block *impair.NarrowCounts
	if n, ok := w.NarrowCounts(ctx, c.cond.Name); ok && c.narrowBefore != nil {
		d := n.Sub(*c.narrowBefore)
		block = &d
	}
	cell := impair.SubAll(after, c.before)
	shared := func(name string) []string {
		if len(names) < 2 {
			return nil
		}
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == name })
	}
	var out Outcome
	for _, d := range cell {
		out.Diagnostics = append(out.Diagnostics, results.Diagnostic{
			Transport: names[0], Condition: c.cond.Name, Name: diagnosticName(w.imp.Method(), d),
			Output: d.Text(w.imp.Method(), appliedFor(c.applied, d.Role)), SharedWith: shared(names[0]),
		})
	}
	for _, name := range names {
		g, measured := goodput(name)
		v := c.verify(name, g, measured, cell, errors.Join(c.beforeErr, afterErr), shared(name))
		if hop := w.conds[c.cond.Name].Narrow; hop.MTU > 0 {
			e, stall := narrow(name, hop)
			v.Narrow = narrowRecord(e, stall, block)
			w.logf("%s / %s: narrow path (MTU %d%s): %s (%s); bulk transfers %d completed, %d stalled; too big %d, ICMP sent %d, fragmented %d; during the stalled ones (%d recorded): too big %d, ICMP sent %d, suppressed %d",
				name, c.cond.Name, hop.MTU, map[bool]string{true: ", ICMP dropped"}[hop.DropICMP], v.Narrow.Verdict, v.Narrow.How,
				e.Completed, e.Stalled, e.Counts.TooBig, e.Counts.ICMPSent, e.Counts.Fragmented,
				e.FailedRecorded, e.Failed.TooBig, e.Failed.ICMPSent, e.Failed.ICMPSuppressed)
		}
		out.Verifications = append(out.Verifications, v)
	}
	return out
}

func diagnosticName(method string, c impair.Counters) string {
	if method == impair.MethodNetem {
		return c.Where + " netem (netlink qdisc statistics)"
	}
	return c.Where + " (userspace impairment counters)"
}

func appliedFor(applied []impair.Applied, role string) *impair.Applied {
	for i := range applied {
		if applied[i].Role == role {
			return &applied[i]
		}
	}
	return nil
}

// verify judges one transport's cell: configured against measured.
func (c *Cell) verify(transport string, goodput float64, measured bool, cell []impair.Counters, countersErr error, sharedWith []string) results.Verification {
	w := c.w
	cc := w.conds[c.cond.Name]
	rtt := c.probed.rtt
	v := impair.Judge(cc, rtt, c.probed.loss, c.probed.during, cell)
	note := v.Note
	rate := impair.JudgeRate(cc, goodput*1e9, measured)
	if !rate.OK {
		v.OK = false
	}
	note = joinNote(note, rate.Note)
	if c.probed.rttErr != nil {
		note = joinNote(note, "RTT probe: "+c.probed.rttErr.Error())
	}
	if c.probed.lossErr != nil {
		v.OK = false
		note = joinNote(note, "loss probe: "+c.probed.lossErr.Error())
	}
	if countersErr != nil {
		note = joinNote(note, "counters: "+countersErr.Error())
	}
	rec := results.Verification{
		Transport: transport, Condition: c.cond.Name, Method: w.imp.Method(),
		ConfiguredRTTMs: ms(cc.RTT), RTTProbes: rtt.N,
		ConfiguredLossPct: cc.LossPct, LossProbeDatagrams: v.Packets, LossProbeLost: v.Lost,
		Packets: v.CounterPackets, Lost: v.CounterLost,
		LossFallback: v.LossFallback,
		LossJudged:   v.LossJudged, OK: v.OK, Note: note, SharedWith: sharedWith,
	}
	if rtt.N > 0 {
		m := ms(rtt.Median)
		rec.MeasuredRTTMs = &m
	}
	if cc.Jitter > 0 {
		exp, got := ms(v.ExpectedRTTIQR), ms(v.MeasuredRTTIQR)
		rec.ExpectedRTTIQRMs, rec.MeasuredRTTIQRMs = &exp, &got
	}
	if cc.RateBps > 0 {
		rec.ConfiguredRateBps = cc.RateBps
		if measured {
			g := goodput * 1e9
			rec.MeasuredRateBps = &g
		}
	}
	if v.LossJudged {
		l, lo, hi := v.MeasuredLossPct, v.LossLowPct, v.LossHighPct
		rec.MeasuredLossPct, rec.LossLowPct, rec.LossHighPct = &l, &lo, &hi
		rec.LossConfidence = impair.LossConfidence
	}
	if v.CounterPackets > 0 && countersErr == nil {
		l := v.CounterLossPct
		rec.CounterLossPct = &l
	}
	verdict := "ok"
	if !v.OK {
		verdict = "NOT VERIFIED"
	}
	lossBy := fmt.Sprintf("end to end of %d datagrams", v.Packets)
	if v.LossFallback != "" {
		lossBy = fmt.Sprintf("by the impairment's loss draws over the probe, of %d frames (fallback)", v.LossDrawn)
	}
	w.logf("%s / %s: verification %s: RTT %.2f ms (configured %v), loss %.3f %% (%.3f–%.3f %%) %s (configured %v %%; the impairment's counters %.3f %% of %d packets)%s",
		transport, c.cond.Name, verdict, ms(rtt.Median), ms(cc.RTT), v.MeasuredLossPct, v.LossLowPct, v.LossHighPct, lossBy, cc.LossPct,
		v.CounterLossPct, v.CounterPackets,
		map[bool]string{true: "; " + note, false: ""}[note != ""])
	return rec
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "; " + b
}
