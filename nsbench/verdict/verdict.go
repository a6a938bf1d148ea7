// Package verdict decides, per cell, whether build B of a transport is
// slower or faster than build A, measured in paired rounds of one run.
//
// Each round gives one reading of A and one of B (in alternating order, so
// a slow drift of the host cancels); the cell's evidence is the per-round
// log ratio dᵢ = ln(Bᵢ/Aᵢ). Its centre is the Hodges–Lehmann estimate
// (the median of the Walsh averages), its interval the signed-rank one at
// 1 − Alpha, its p-value the Wilcoxon signed-rank test's (exact up to
// stats.ExactSignedRankMax pairs, normal with continuity correction above),
// adjusted across the cells of one call by Benjamini–Hochberg. Nothing is
// assumed about the distribution of the readings.
//
// A cell is "slower" or "faster" only when its change is significant, at
// least MinEffect, and confirmed: the pairs before the last ConfirmPairs
// show it on their own, and the last ConfirmPairs pairs — a disjoint batch;
// after Plan's first look, one measured after the look before — show it
// again on their own. It is "no change" only when its
// whole interval lies within the equivalence band, and "undecided"
// otherwise. The band is symmetric in log space: [1/(1+MinEffect),
// 1+MinEffect], so a 5 % band is 0.952…1.05 in ratio.
//
// Plan is the sequential rule that decides how many more rounds a run
// measures; TestAAFalseAlarms measures the whole procedure's false-alarm
// rate and TestPower its power (docs/builds.md states both).
package verdict

import (
	"fmt"
	"math"
	"slices"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// Pair is one round's A and B readings of one cell's metric.
type Pair struct {
	Round                int
	A, B                 float64
	ACensored, BCensored bool // the reading is a lower bound ("≥"), never paired as exact
}

// Cell is one (transport, condition, instrument, metric) compared across builds A and B.
type Cell struct {
	Transport, Condition, Instrument, Metric string // Transport: the base name, e.g. "tw"
	Unit                                     string
	Better                                   string // results.BetterHigher or results.BetterLower
	Pairs                                    []Pair
}

// Kind is a cell's verdict.
type Kind string

const (
	Slower    Kind = "slower"    // B worse than A by at least MinEffect, significant
	Faster    Kind = "faster"    // B better than A by at least MinEffect, significant
	NoChange  Kind = "no change" // the whole interval lies within ±MinEffect (equivalence)
	Undecided Kind = "undecided"
)

// Options are the verdict's thresholds; a zero field takes its default.
type Options struct {
	MinEffect float64 // relative, default 0.05
	Alpha     float64 // default 0.05, applied after Benjamini–Hochberg across cells
}

// Defaults for a zero Options field.
const (
	DefaultMinEffect = 0.05
	DefaultAlpha     = 0.05
)

// WithDefaults fills the zero fields of o.
func (o Options) WithDefaults() Options {
	if o.MinEffect == 0 {
		o.MinEffect = DefaultMinEffect
	}
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	return o
}

// Validate refuses thresholds the rule cannot use, in one line: a min
// effect outside [0, 1) or an alpha outside [0, 0.5] (0 takes the default).
func (o Options) Validate() error {
	if !(o.MinEffect >= 0 && o.MinEffect < 1) {
		return fmt.Errorf("min effect %v: want a fraction in [0, 1), e.g. 0.05 for 5 %%", o.MinEffect)
	}
	if !(o.Alpha >= 0 && o.Alpha <= 0.5) {
		return fmt.Errorf("alpha %v: want a level in (0, 0.5], e.g. 0.05", o.Alpha)
	}
	return nil
}

// Change is B against A: the ratio B/A and its interval.
type Change struct {
	Ratio  float64 // B/A, Hodges–Lehmann estimate on per-round log ratios; NaN when N too small
	Lo, Hi float64 // its confidence interval (signed-rank), same scale; NaN when not computable
}

// Result is one cell's verdict.
type Result struct {
	Cell
	N        int     // pairs used (censored pairs excluded)
	Censored int     // pairs left out because a reading was a bound
	Change           // B/A with its interval
	P, Q     float64 // signed-rank p-value, and BH-adjusted across all cells of the call
	MDE      float64 // smallest relative change this cell could have detected at its N and spread
	Verdict  Kind
	Reason   string // short, why (e.g. "significant but 3 % < min effect 5 %"); report words it
}

// ConfirmPairs is the size of the confirmation batch: the last pairs of a
// cell, which must show a change again on their own. Six is the fewest
// pairs whose signed-rank test can reach p < 0.05 (all six of one sign:
// two-sided 2/64); a cell therefore needs 2·ConfirmPairs pairs before it
// can be called slower or faster.
const ConfirmPairs = 6

// Decide gives each cell its verdict. The cells' p-values are adjusted
// together (Benjamini–Hochberg), so call it once with every cell of a run.
func Decide(cells []Cell, o Options) []Result {
	o = o.WithDefaults()
	rs := make([]Result, len(cells))
	ds := make([][]float64, len(cells))
	var ps []float64
	var tested []int
	for i, c := range cells {
		rs[i], ds[i] = estimate(c, o)
		if !math.IsNaN(rs[i].P) {
			ps = append(ps, rs[i].P)
			tested = append(tested, i)
		}
	}
	for k, q := range stats.BenjaminiHochberg(ps) {
		rs[tested[k]].Q = q
	}
	for i := range rs {
		rs[i].Verdict, rs[i].Reason = judge(rs[i], ds[i], o)
	}
	return rs
}

// Readings returns the A and B readings of the pairs the verdict uses, in
// round order: censored pairs and pairs with a reading ≤ 0 or not a
// number are left out. censored and invalid count them.
func (c Cell) Readings() (as, bs []float64, censored, invalid int) {
	pairs := slices.Clone(c.Pairs)
	slices.SortStableFunc(pairs, func(a, b Pair) int { return a.Round - b.Round })
	for _, p := range pairs {
		switch {
		case p.ACensored || p.BCensored:
			censored++
		case !(p.A > 0) || !(p.B > 0) || math.IsInf(p.A, 0) || math.IsInf(p.B, 0):
			invalid++
		default:
			as, bs = append(as, p.A), append(bs, p.B)
		}
	}
	return as, bs, censored, invalid
}

// usable returns the log ratios ln(B/A) of the pairs Readings keeps.
func usable(c Cell) (d []float64, censored, invalid int) {
	as, bs, censored, invalid := c.Readings()
	for i := range as {
		d = append(d, math.Log(bs[i]/as[i]))
	}
	return d, censored, invalid
}

// estimate fills a cell's numbers (all but Q and the verdict) and returns
// its log ratios.
func estimate(c Cell, o Options) (Result, []float64) {
	d, censored, invalid := usable(c)
	r := Result{Cell: c, N: len(d), Censored: censored,
		Change: Change{Ratio: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}, P: math.NaN(), Q: math.NaN(), MDE: math.NaN()}
	if invalid > 0 {
		r.Reason = fmt.Sprintf("%d pairs left out: a reading ≤ 0 or not a number", invalid)
	}
	if len(d) == 0 {
		return r, d
	}
	hl, ci := stats.HodgesLehmannCI(d, 1-o.Alpha)
	r.Ratio = math.Exp(hl)
	if ci.Reached {
		r.Lo, r.Hi = math.Exp(ci.Low), math.Exp(ci.High)
	}
	r.P = stats.WilcoxonSignedRank(d).P()
	r.MDE = mde(d, o)
	return r, d
}

// worse says whether the log ratio l is a change for the worse of a metric
// that is better when higher or lower; ok is false when the metric has no
// better direction.
func worse(better string, l float64) (w, ok bool) {
	switch better {
	case results.BetterHigher:
		return l < 0, true
	case results.BetterLower:
		return l > 0, true
	}
	return false, false
}

// judge applies the verdict's rule to a cell whose numbers are known.
func judge(r Result, d []float64, o Options) (Kind, string) {
	why := func(s string) string {
		if r.Reason != "" {
			return s + "; " + r.Reason
		}
		return s
	}
	band := math.Log1p(o.MinEffect)
	if math.IsNaN(r.Lo) {
		return Undecided, why(fmt.Sprintf("%d pairs: too few for an interval", r.N))
	}
	l := math.Log(r.Ratio)
	isWorse, directed := worse(r.Better, l)
	kind := Faster
	if isWorse {
		kind = Slower
	}
	significant := r.Q < o.Alpha
	if significant && math.Abs(l) >= band && directed {
		if ok, because := confirmed(d, l > 0, o); !ok {
			return Undecided, why(fmt.Sprintf("%s on all %d pairs, not confirmed: %s", kind, r.N, because))
		}
		return kind, why(fmt.Sprintf("q %.2g, confirmed on the last %d pairs", r.Q, ConfirmPairs))
	}
	if r.Lo >= math.Exp(-band) && r.Hi <= math.Exp(band) {
		return NoChange, why(fmt.Sprintf("interval within ±%s", pct(o.MinEffect)))
	}
	switch {
	case significant && !directed:
		return Undecided, why("significant, but the metric has no better direction")
	case significant:
		return Undecided, why(fmt.Sprintf("significant but %s < min effect %s", pct(math.Abs(r.Ratio-1)), pct(o.MinEffect)))
	}
	return Undecided, why(fmt.Sprintf("not significant (q %.2g), interval wider than ±%s", r.Q, pct(o.MinEffect)))
}

// confirmed says whether a change in the direction up (log ratio > 0)
// shows on its own both in the pairs before the last ConfirmPairs (two-
// sided p < Alpha, estimate the same way) and in the last ConfirmPairs
// (one-sided p < Alpha that way).
func confirmed(d []float64, up bool, o Options) (bool, string) {
	if len(d) < 2*ConfirmPairs {
		return false, fmt.Sprintf("needs %d pairs, %d before a fresh batch of %d", 2*ConfirmPairs, ConfirmPairs, ConfirmPairs)
	}
	first, last := d[:len(d)-ConfirmPairs], d[len(d)-ConfirmPairs:]
	s := stats.WilcoxonSignedRank(first)
	if s.P() >= o.Alpha || (stats.HodgesLehmann(first) > 0) != up {
		return false, fmt.Sprintf("the first %d pairs alone: p %.2g", len(first), s.P())
	}
	c := stats.WilcoxonSignedRank(last)
	p := c.PLess
	if up {
		p = c.PMore
	}
	if p >= o.Alpha {
		return false, fmt.Sprintf("the last %d pairs alone: p %.2g", len(last), p)
	}
	return true, ""
}

// pct writes a relative change as a percentage of three significant digits.
func pct(x float64) string {
	return fmt.Sprintf("%.3g %%", 100*x)
}
