package nsbench

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/profile"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/twnsbench/twnsbench/nsbench/verdict"
)

// Builds are the options of a run of two builds of a transport (rows
// NAME@LABEL, transport.CheckBuilds): rows of the two builds are measured
// in paired rounds, and each cell gets a verdict on B against A.
type Builds struct {
	// MinEffect is the smallest relative change a verdict calls slower
	// or faster (--min-effect, 0.05 for 5 %), in every cell; 0 when not
	// given: each cell's metric's own, else verdict.DefaultMinEffect
	// (verdict.Options.MinEffectFor).
	MinEffect float64
	// MaxRounds caps the rounds the verdict may ask for (--max-rounds).
	MaxRounds int
	// FailOn selects the cells whose verdicts set the exit code
	// (--fail-on); empty: DefaultFailOn.
	FailOn []FailOn
	// Profile samples the roles' CPU stacks during each build's samples
	// and compares B's with A's (--profile, nsbench/profile).
	Profile bool
}

// BuildsDefaults are the defaults of a run of builds.
var BuildsDefaults = Builds{MaxRounds: 20}

// verdictAlpha is the verdict's significance level (false discovery rate
// across cells).
const verdictAlpha = 0.05

// minDifferenceMs is the smallest change of a difference in ms (rrul's
// latency increase) a verdict calls slower or faster, whatever A's level:
// the resolution --runs auto asks of it too (AutoRuns.PrecisionMs).
const minDifferenceMs = 1

// BuildsOrder names the order of the two builds in each round.
const BuildsOrder = "ABBA"

// HasBuilds reports whether the plan names builds (a row NAME@LABEL).
func (o Options) HasBuilds() bool {
	return slices.ContainsFunc(o.Transports, func(w string) bool { return strings.Contains(w, "@") })
}

// FailOn selects cells by condition, instrument and metric; "*" matches
// any.
type FailOn struct{ Condition, Instrument, Metric string }

// DefaultFailOn is every cell's headline value.
var DefaultFailOn = []FailOn{{"*", "*", "value"}}

func (f FailOn) String() string { return f.Condition + "/" + f.Instrument + "/" + f.Metric }

func (f FailOn) matches(cond, in, metric string) bool {
	m := func(pat, s string) bool { return pat == "*" || pat == s }
	return m(f.Condition, cond) && m(f.Instrument, in) && m(f.Metric, metric)
}

// failOns are the --fail-on selectors in force.
type failOns []FailOn

// failOnOf is b's --fail-on, DefaultFailOn when none was given.
func failOnOf(b Builds) failOns {
	if len(b.FailOn) == 0 {
		return DefaultFailOn
	}
	return b.FailOn
}

// selects reports whether a cell's verdict sets the exit code.
func (fs failOns) selects(cond, in, metric string) bool {
	return slices.ContainsFunc(fs, func(f FailOn) bool { return f.matches(cond, in, metric) })
}

var failOnWord = regexp.MustCompile(`^(\*|[a-z0-9_.-]+)$`)

// ParseFailOn reads --fail-on: a comma-separated list of
// INSTRUMENT (its value), INSTRUMENT/METRIC or
// CONDITION/INSTRUMENT/METRIC, any part * for every one, or all (every
// metric of every cell that has a better direction).
func ParseFailOn(s string) ([]FailOn, error) {
	var out []FailOn
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		if w == "all" {
			out = append(out, FailOn{"*", "*", "*"})
			continue
		}
		parts := strings.Split(w, "/")
		var f FailOn
		switch len(parts) {
		case 1:
			f = FailOn{"*", parts[0], "value"}
		case 2:
			f = FailOn{"*", parts[0], parts[1]}
		case 3:
			f = FailOn{parts[0], parts[1], parts[2]}
		default:
			return nil, fmt.Errorf("--fail-on %q: want INSTRUMENT, INSTRUMENT/METRIC or CONDITION/INSTRUMENT/METRIC (or all)", w)
		}
		for _, p := range []string{f.Condition, f.Instrument, f.Metric} {
			if !failOnWord.MatchString(p) {
				return nil, fmt.Errorf("--fail-on %q: %q is not a name or *", w, p)
			}
		}
		if f.Instrument != "*" && !slices.Contains(instrument.Names(), f.Instrument) {
			return nil, fmt.Errorf("--fail-on %q: unknown instrument %q (known: %s)", w, f.Instrument, strings.Join(instrument.Names(), ", "))
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, errors.New("--fail-on: empty list")
	}
	return out, nil
}

// validateBuilds checks a plan of builds; conds are its conditions'
// names.
func (o Options) validateBuilds(conds []string) []error {
	if !o.HasBuilds() {
		return nil
	}
	var errs []error
	b := o.Builds
	if b.MinEffect < 0 || b.MinEffect >= 1 {
		errs = append(errs, fmt.Errorf("--min-effect %g %%: want above 0 and below 100 %%", b.MinEffect*100))
	}
	if b.MaxRounds < o.Runs || b.MaxRounds > 1000 {
		errs = append(errs, fmt.Errorf("--max-rounds %d: want %d (--runs) to 1000", b.MaxRounds, o.Runs))
	}
	if o.RunsAuto {
		errs = append(errs, errors.New("--runs auto: not with builds (NAME@LABEL): their verdict plans its own rounds, up to --max-rounds"))
	}
	if o.Order == OrderReference {
		errs = append(errs, errors.New("--order reference: not with builds (NAME@LABEL): the two builds are measured in alternating rounds"))
	}
	if b.Profile {
		if o.Hosts.On() {
			errs = append(errs, errors.New("--profile: not with --host: perf samples the roles' cgroup on this machine only"))
		} else if _, err := profile.Find(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range b.FailOn {
		if f.Condition != "*" && !slices.Contains(conds, f.Condition) {
			errs = append(errs, fmt.Errorf("--fail-on %s: no condition %q in this run (it has: %s)", f, f.Condition, strings.Join(conds, ", ")))
		}
	}
	return errs
}

// buildPair is a transport's two builds: the rows A (named first) and B.
type buildPair struct{ transport, a, b string }

// buildPairs finds the build pairs among rows, in order.
func buildPairs(rows []string) []buildPair {
	var out []buildPair
	idx := map[string]int{}
	for _, r := range rows {
		base, _, at := transport.SplitBuild(r)
		if !at {
			continue
		}
		i, seen := idx[base]
		switch {
		case !seen:
			idx[base] = len(out)
			out = append(out, buildPair{transport: base, a: r})
		case out[i].b == "":
			out[i].b = r
		}
	}
	return slices.DeleteFunc(out, func(p buildPair) bool { return p.b == "" })
}

// pairCells extracts, for each build pair, every cell of a metric with a
// better direction: the pairs are the rounds in which both A and B have
// a sample, each reading flagged when it is censored (a lower bound). A
// difference (results.Metric.Difference) is decided on B − A.
func pairCells(doc *results.Document, pairs []buildPair) []verdict.Cell {
	type key struct{ row, cond, in string }
	byRun := map[key]map[int]results.Sample{}
	var order []key
	for _, s := range doc.Samples {
		k := key{s.Transport, s.Condition, s.Instrument}
		if byRun[k] == nil {
			byRun[k] = map[int]results.Sample{}
			order = append(order, k)
		}
		byRun[k][s.Run] = s
	}
	var cells []verdict.Cell
	for _, p := range pairs {
		for _, k := range order {
			if k.row != p.a {
				continue
			}
			as, bs := byRun[k], byRun[key{p.b, k.cond, k.in}]
			ta, _ := doc.TransportOf(p.a)
			for _, m := range declaredMetrics(doc, k.in) {
				// A kernel tunnel's own CPU is no figure (results.MetricReadings).
				if m.Better == "" || results.OwnCPUMetric(m.Key) && ta.OwnCPUAbsent() != "" {
					continue
				}
				c := verdict.Cell{Transport: p.transport, Condition: k.cond, Instrument: k.in, Metric: m.Key, Unit: m.Unit, Better: m.Better,
					OwnMinEffect: m.MinEffect}
				if m.Difference {
					c.Scale = verdict.ScaleDifference
					if m.Unit == "ms" {
						c.MinDifference = minDifferenceMs
					}
				}
				for _, run := range sortedRuns(as) {
					ra, okA := as[run].Reading(m)
					rb, okB := bs[run].Reading(m)
					if _, inB := bs[run]; !inB || !okA || !okB {
						continue
					}
					c.Pairs = append(c.Pairs, verdict.Pair{Round: run, A: ra.Value, B: rb.Value, ACensored: ra.AtLeast, BCensored: rb.AtLeast,
						AFree: freeShare(as[run]), BFree: freeShare(bs[run])})
				}
				if len(c.Pairs) > 0 {
					cells = append(cells, c)
				}
			}
		}
	}
	return cells
}

// freeShare is the share of the host's CPU the host's other work and
// steal left to the run during s (the verdict adjusts for it), between
// 1 % and 1; 0 when s has no reading of the host's work.
func freeShare(s results.Sample) float64 {
	if s.Noise == nil {
		return 0
	}
	busy := (s.Noise.BackgroundPct + s.Noise.StealPct) / 100
	return min(1, max(0.01, 1-busy))
}

func declaredMetrics(doc *results.Document, in string) []results.Metric {
	for _, d := range doc.Instruments {
		if d.Name == in {
			return d.Metrics
		}
	}
	return nil
}

func sortedRuns(m map[int]results.Sample) []int {
	var runs []int
	for r := range m {
		runs = append(runs, r)
	}
	slices.Sort(runs)
	return runs
}

// decideBuilds gives every paired cell of the document its verdict.
func decideBuilds(doc *results.Document, b Builds) *results.Verdicts {
	pairs := buildPairs(transportNames(doc))
	failOn := failOnOf(b)
	runMinEffect := b.MinEffect
	if runMinEffect == 0 {
		runMinEffect = verdict.DefaultMinEffect
	}
	v := &results.Verdicts{Order: BuildsOrder, MinEffect: runMinEffect, Alpha: verdictAlpha, MaxRounds: b.MaxRounds, Cells: []results.Verdict{}}
	for _, f := range failOn {
		v.FailOn = append(v.FailOn, f.String())
	}
	rs := verdict.Decide(pairCells(doc, pairs), verdict.Options{MinEffect: b.MinEffect, Alpha: verdictAlpha})
	for _, r := range rs {
		rec := r.Record()
		for _, p := range pairs {
			if p.transport == r.Transport {
				rec.A, rec.B = p.a, p.b
			}
		}
		rec.Counts = failOn.selects(rec.Condition, rec.Instrument, rec.Metric)
		v.Cells = append(v.Cells, rec)
	}
	return v
}

func transportNames(doc *results.Document) []string {
	var names []string
	for _, t := range doc.Transports {
		names = append(names, t.Name)
	}
	return names
}

// Outcome is what the verdicts of the cells --fail-on selects say, for
// the exit code: Regressed lists those confirmed slower, Undecided those
// without a verdict; Counted is how many cells it selected.
type Outcome struct {
	Regressed, Undecided []results.Verdict
	Counted              int
}

// VerdictOutcome reads a document's verdicts for the exit code; ok is
// false when the document has none (no builds).
func VerdictOutcome(doc *results.Document) (o Outcome, ok bool) {
	if doc == nil || doc.Verdicts == nil {
		return o, false
	}
	for _, v := range doc.Verdicts.Cells {
		if v.Counts {
			o.Counted++
		}
		switch {
		case !v.Counts:
		case v.Verdict == string(verdict.Slower):
			o.Regressed = append(o.Regressed, v)
		case v.Verdict == string(verdict.Undecided):
			o.Undecided = append(o.Undecided, v)
		}
	}
	return o, true
}
