// Package verdict decides, per cell, whether build B of a transport is
// slower or faster than build A, measured in paired rounds of one run.
//
// Each round gives one reading of A and one of B (in alternating order, so
// a slow drift of the host cancels); the cell's evidence is the per-round
// log ratio dᵢ = ln(Bᵢ/Aᵢ), or for a difference or a count (Scale) the
// per-round difference dᵢ = Bᵢ − Aᵢ against a band in the unit. Its centre is the Hodges–Lehmann estimate
// (the median of the Walsh averages), its interval the signed-rank one at
// 1 − Alpha, its p-value the Wilcoxon signed-rank test's (exact up to
// stats.ExactSignedRankMax pairs, normal with continuity correction above),
// adjusted across the cells of one call by Benjamini–Hochberg. Nothing is
// assumed about the distribution of the readings.
//
// A cell is "slower" or "faster" only when its change is significant, at
// least its min effect (Options.MinEffectFor: the run's, else its
// metric's own, else DefaultMinEffect), and confirmed: the earlier half of
// the pairs shows it on its own, and the later half (ConfirmBatch, at least
// ConfirmPairs) — a disjoint batch, measured after — shows it again on its
// own. It is "no change" only when its
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
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// Pair is one round's A and B readings of one cell's metric.
type Pair struct {
	Round                int
	A, B                 float64
	ACensored, BCensored bool // the reading is a lower bound ("≥"), never paired as exact
	// AFree and BFree are the shares of the host's CPU left to the run
	// while A and B were read (1 − the host's other work − steal); 0 when
	// not measured. With them a ratio cell is adjusted for the host's
	// other work (adjust.go).
	AFree, BFree float64
}

// Cell is one (transport, condition, instrument, metric) compared across builds A and B.
type Cell struct {
	Transport, Condition, Instrument, Metric string // Transport: the base name, e.g. "tw"
	Unit                                     string
	Better                                   string // results.BetterHigher or results.BetterLower
	Pairs                                    []Pair
	// Scale is how a pair is compared: ScaleRatio (the default) or
	// ScaleDifference; a ratio cell with a reading of 0 is decided as
	// ScaleCount (see Cell.Scale).
	Scale Scale
	// MinDifference is the smallest change in the unit a difference or
	// count cell calls slower or faster, whatever A's level (the band is
	// the wider of it and MinEffect·|A's mean|); 0 for none.
	MinDifference float64
	// OwnMinEffect is the metric's own min effect (results.Metric.
	// MinEffect): the cell's when the run gives none (Options.
	// MinEffectFor); 0 for none.
	OwnMinEffect float64
}

// Scale is how a cell's pairs are compared.
type Scale string

const (
	// ScaleRatio compares ln(B/A): readings > 0 (rates, times, costs),
	// whose changes are relative.
	ScaleRatio Scale = ""
	// ScaleDifference compares B − A in the unit: a difference of two
	// readings (rrul's latency increase), which can be ≤ 0, where no
	// ratio has a meaning (B at −1 ms against A at 0.5 ms).
	ScaleDifference Scale = "difference"
	// ScaleCount compares B − A in the unit: readings ≥ 0 that can be 0
	// (retransmits, loss), whose ratio a round of 0 leaves undefined.
	ScaleCount Scale = "count"
)

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
	// MinEffect is relative: given, every cell's; 0: each cell's own
	// (Cell.OwnMinEffect), else DefaultMinEffect (MinEffectFor).
	MinEffect float64
	Alpha     float64 // default 0.05, applied after Benjamini–Hochberg across cells
}

// Defaults for a zero Options field.
const (
	DefaultMinEffect = 0.05
	DefaultAlpha     = 0.05
)

// WithDefaults fills the zero fields of o but MinEffect, whose zero means
// each cell's own (MinEffectFor).
func (o Options) WithDefaults() Options {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	return o
}

// MinEffectFor is the min effect c is decided with: o's when given (it
// applies to every cell), else the cell's metric's own, else
// DefaultMinEffect. A metric declares its own where its readings repeat
// far closer than DefaultMinEffect (a count of instructions, ~1 %), so
// that a run asks no more of its noisier cells to see a change there.
func (o Options) MinEffectFor(c Cell) float64 {
	switch {
	case o.MinEffect != 0:
		return o.MinEffect
	case c.OwnMinEffect != 0:
		return c.OwnMinEffect
	}
	return DefaultMinEffect
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

// Change is B against A on the cell's scale: the ratio B/A and its
// interval for a ratio cell, B − A and its interval for a difference or
// count cell; the other scale's fields are NaN.
type Change struct {
	Ratio  float64 // B/A, Hodges–Lehmann estimate on per-round log ratios; NaN when N too small
	Lo, Hi float64 // its confidence interval (signed-rank), same scale; NaN when not computable
	// Delta is B − A in the unit, the Hodges–Lehmann estimate on the
	// per-round differences, and DeltaLo, DeltaHi its interval.
	Delta, DeltaLo, DeltaHi float64
}

// PairCounts say which of a cell's pairs its decision stands on.
type PairCounts struct {
	N        int // pairs used, bounded pairs included
	Censored int // pairs left out because a reading was a bound of unknown sign against the other
	// Bounded are the pairs used at a bound: one reading censored ("≥")
	// beyond the other, so the change's sign is known and its size is at
	// least the one used.
	Bounded int
}

// Result is one cell's verdict.
type Result struct {
	Cell
	Scale Scale // the scale the cell was decided on (ScaleCount for a ratio cell with a 0)
	PairCounts
	Change // B against A with its interval
	Significance
	// MDE is the smallest change this cell could have detected at its N
	// and spread: relative for a ratio cell, in the unit for the others.
	MDE float64
	HostAdjustment
	Threshold
	Verdict Kind
	Reason  string // short, why (e.g. "significant but 3 % < min effect 5 %"); report words it
}

// Threshold is what a cell's change was held against: its min effect
// (relative, Options.MinEffectFor) and the band's half-width that makes on
// its scale.
type Threshold struct {
	MinEffect float64
	Band      float64 // relative, or in the unit (see Cell.MinDifference)
}

// Significance is a cell's signed-rank p-value, and its q: p adjusted by
// Benjamini–Hochberg across all cells of the call.
type Significance struct {
	P, Q float64
}

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

// ScaleUsed is the scale c is decided on: c.Scale, but ScaleCount for a
// ratio cell with an exact reading of 0 and none below (retransmits,
// loss): its ratio is undefined in those rounds, and leaving them out
// would drop exactly the rounds in which the builds differ most.
func (c Cell) ScaleUsed() Scale {
	if c.Scale != ScaleRatio {
		return c.Scale
	}
	zero := false
	for _, p := range c.Pairs {
		for _, x := range [...]struct {
			v        float64
			censored bool
		}{{p.A, p.ACensored}, {p.B, p.BCensored}} {
			switch {
			case x.censored || math.IsNaN(x.v):
			case x.v < 0:
				return ScaleRatio // not a count: its pairs are left out as ≤ 0
			case x.v == 0:
				zero = true
			}
		}
	}
	if zero {
		return ScaleCount
	}
	return ScaleRatio
}

// compare is one pair's change on scale s: ln(b/a), or b − a.
func compare(s Scale, a, b float64) float64 {
	if s == ScaleRatio {
		return math.Log(b / a)
	}
	return b - a
}

// valid says whether a reading can be compared on scale s: a number,
// finite, above 0 for a ratio and at least 0 for a count.
func valid(s Scale, x float64) bool {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return false
	case s == ScaleRatio:
		return x > 0
	case s == ScaleCount:
		return x >= 0
	}
	return true
}

// pairsUsed are the pairs of a cell the verdict uses, in round order,
// with each one's change d on the cell's scale (ScaleUsed). A pair with a
// censored reading ("≥ x") is used when its sign is known anyway — B's
// bound already above A's exact reading, or A's bound above B's — with
// the change at the bound, which understates it: bounded counts them.
// The other censored pairs (both bounds, or a bound short of the other
// reading) are left out and counted in censored; pairs with a reading
// the scale cannot compare, in invalid.
type pairsUsed struct {
	as, bs, d                  []float64
	free                       []float64 // ln(BFree/AFree) of each used pair, while every one is known
	bounded, censored, invalid int
	freeUnknown                bool // some used pair lacks its free shares
}

func usePairs(c Cell) pairsUsed {
	s := c.ScaleUsed()
	pairs := slices.Clone(c.Pairs)
	slices.SortStableFunc(pairs, func(a, b Pair) int { return a.Round - b.Round })
	var u pairsUsed
	for _, p := range pairs {
		if !valid(s, p.A) || !valid(s, p.B) {
			u.invalid++
			continue
		}
		d := compare(s, p.A, p.B)
		switch {
		case p.ACensored && p.BCensored:
			u.censored++
			continue
		case p.BCensored && d > 0, p.ACensored && d < 0: // B ≥ its bound > A, or A ≥ its bound > B
			u.bounded++
		case p.ACensored || p.BCensored:
			u.censored++
			continue
		}
		u.as, u.bs, u.d = append(u.as, p.A), append(u.bs, p.B), append(u.d, d)
		if p.AFree > 0 && p.BFree > 0 && !u.freeUnknown {
			u.free = append(u.free, math.Log(p.BFree/p.AFree))
		} else {
			u.free, u.freeUnknown = nil, true
		}
	}
	return u
}

// Readings returns the A and B readings of the pairs the verdict uses, in
// round order (a bound as its value, see usePairs): censored pairs whose
// sign is unknown and pairs the cell's scale cannot compare (≤ 0 for a
// ratio, below 0 for a count, not a number) are left out. censored and
// invalid count them.
func (c Cell) Readings() (as, bs []float64, censored, invalid int) {
	u := usePairs(c)
	return u.as, u.bs, u.censored, u.invalid
}

// estimate fills a cell's numbers (all but Q and the verdict) and returns
// its changes on its scale.
func estimate(c Cell, o Options) (Result, []float64) {
	u := usePairs(c)
	nan := math.NaN()
	r := Result{Cell: c, Scale: c.ScaleUsed(), PairCounts: PairCounts{N: len(u.d), Censored: u.censored, Bounded: u.bounded},
		Change: Change{Ratio: nan, Lo: nan, Hi: nan, Delta: nan, DeltaLo: nan, DeltaHi: nan}, Significance: Significance{P: nan, Q: nan}, MDE: nan,
		HostAdjustment: HostAdjustment{Slope: nan, UnadjustedMDE: nan}}
	r.MinEffect = o.MinEffectFor(c)
	r.Band = band(r.Scale, c.MinDifference, u.as, r.MinEffect)
	var notes []string
	if u.invalid > 0 {
		what := "a reading ≤ 0 or not a number"
		if r.Scale != ScaleRatio {
			what = "a reading not a number"
			if r.Scale == ScaleCount {
				what = "a reading below 0 or not a number"
			}
		}
		notes = append(notes, fmt.Sprintf("%d pairs left out: %s", u.invalid, what))
	}
	if u.bounded > 0 {
		notes = append(notes, fmt.Sprintf("%d pairs at a bound (≥) beyond the other reading: their change is at least the one used", u.bounded))
	}
	r.Reason = strings.Join(notes, "; ")
	if len(u.d) == 0 {
		return r, u.d
	}
	d := u.d
	r.HostAdjustment = HostAdjustment{Slope: nan, UnadjustedMDE: nan}
	if adj, slope, ok := adjustForHost(u, r.Scale); ok {
		r.Slope, r.UnadjustedMDE = slope, math.Expm1(mde(u.d, o))
		d = adj
	}
	hl, ci := stats.HodgesLehmannCI(d, 1-o.Alpha)
	if r.Scale == ScaleRatio {
		r.Ratio = math.Exp(hl)
		if ci.Reached {
			r.Lo, r.Hi = math.Exp(ci.Low), math.Exp(ci.High)
		}
	} else {
		r.Delta = hl
		if ci.Reached {
			r.DeltaLo, r.DeltaHi = ci.Low, ci.High
		}
	}
	r.P = stats.WilcoxonSignedRank(d).P()
	r.MDE = mde(d, o)
	if r.Scale == ScaleRatio {
		r.MDE = math.Expm1(r.MDE)
	}
	return r, d
}

// band is the min-effect band's half-width on scale s: minEffect relative
// for a ratio; in the unit, the wider of minEffect·|A's mean| and
// minDiff, for a difference or count (a level near 0 has no relative
// band worth the name: 5 % of A's 0.5 ms is 25 µs).
func band(s Scale, minDiff float64, as []float64, minEffect float64) float64 {
	if s == ScaleRatio {
		return minEffect
	}
	mean := 0.0
	for _, a := range as {
		mean += a / float64(len(as))
	}
	return max(minDiff, minEffect*math.Abs(mean))
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

// judge applies the verdict's rule to a cell whose numbers are known: on
// the log ratio against a band symmetric in log space for a ratio cell,
// on B − A against ±Band for the others.
func judge(r Result, d []float64, o Options) (Kind, string) {
	why := func(s string) string {
		if r.Reason != "" {
			return s + "; " + r.Reason
		}
		return s
	}
	est, lo, hi, band := r.Delta, r.DeltaLo, r.DeltaHi, r.Band
	size := func(x float64) string { return unitText(x, r.Unit) }
	if r.Scale == ScaleRatio {
		est, lo, hi, band = math.Log(r.Ratio), math.Log(r.Lo), math.Log(r.Hi), math.Log1p(r.Band)
		size = func(l float64) string { return pct(math.Abs(math.Expm1(l))) }
	}
	if math.IsNaN(lo) {
		return Undecided, why(fmt.Sprintf("%d pairs: too few for an interval", r.N))
	}
	isWorse, directed := worse(r.Better, est)
	kind := Faster
	if isWorse {
		kind = Slower
	}
	significant := r.Q < o.Alpha
	if significant && est != 0 && math.Abs(est) >= band && directed {
		if ok, because := confirmed(d, est > 0, o); !ok {
			return Undecided, why(fmt.Sprintf("%s on all %d pairs, not confirmed: %s", kind, r.N, because))
		}
		return kind, why(fmt.Sprintf("q %.2g, confirmed on the last %d pairs", r.Q, ConfirmBatch(len(d))))
	}
	if lo >= -band && hi <= band {
		return NoChange, why(fmt.Sprintf("interval within ±%s", size(band)))
	}
	switch {
	case significant && !directed:
		return Undecided, why("significant, but the metric has no better direction")
	case significant:
		return Undecided, why(fmt.Sprintf("significant but %s < min effect %s", size(est), size(band)))
	}
	return Undecided, why(fmt.Sprintf("not significant (q %.2g), interval wider than ±%s", r.Q, size(band)))
}

// unitText writes a change in a unit with three significant digits:
// "0.4 ms".
func unitText(x float64, unit string) string {
	s := strconv.FormatFloat(math.Abs(x), 'g', 3, 64)
	if unit != "" {
		s += " " + unit
	}
	return s
}

// pct writes a relative change as a percentage of three significant digits.
func pct(x float64) string {
	return fmt.Sprintf("%.3g %%", 100*x)
}
