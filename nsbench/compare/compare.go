// Package compare puts two results documents side by side, per transport ×
// condition × instrument × metric, in the style of benchstat: both medians,
// the change, and whether the change is significant (Mann-Whitney U, its
// p-values adjusted for the number of comparisons by Benjamini–Hochberg).
package compare

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
	"github.com/twnsbench/twnsbench/nsbench/textsafe"
)

// Alpha is the significance level of the verdicts.
const Alpha = 0.05

// Row compares one metric of one cell: the two documents' readings and
// the change between them.
type Row struct {
	results.CellKey
	Unit, Better         string // as the instrument declared them; "" in undeclared documents
	Old, New             []float64
	OldMedian, NewMedian float64
	Change
	// Bounds counts, per side, the runs whose reading is a lower bound
	// (censored); such a row is not tested.
	Bounds Bounds
	// Untested, when set, is why a row without bounds has no test either
	// (a fairness index: one value per side); its P and Q are NaN.
	Untested string
}

// Change is how far a row's median moved and whether that is significant.
type Change struct {
	ChangePct float64 // (new − old) / old × 100; NaN when old is 0
	// P is the row's own Mann-Whitney p-value; Q is P adjusted for every
	// row compared (Benjamini–Hochberg), and the verdict's. Both are NaN
	// in a row with a lower bound (see Bounds).
	P, Q        float64
	Significant bool
}

// Correction names the adjustment of the p-values, for the output.
const Correction = "Benjamini–Hochberg"

// Verdict is benchstat's notation: "~" for no significant change,
// otherwise the signed change, and whether it is better or worse where the
// instrument declared which direction is better.
func (r Row) Verdict() string {
	if !r.tested() {
		return notTested
	}
	if !r.Significant {
		return "~"
	}
	up := r.NewMedian > r.OldMedian
	v := fmt.Sprintf("%+.1f %%", r.ChangePct)
	if math.IsNaN(r.ChangePct) { // from a zero median: no relative change
		v = "down from 0"
		if up {
			v = "up from 0"
		}
	}
	switch {
	case r.Better == results.BetterHigher && up, r.Better == results.BetterLower && !up:
		v += " better"
	case r.Better != "":
		v += " worse"
	}
	return v
}

// tested reports whether the row has a p-value.
func (r Row) tested() bool { return !r.Bounds.Any() && r.Untested == "" }

// Rows compares every metric present in both documents, in the new
// document's order. Metrics present in only one document are left out.
func Rows(old, cur *results.Document) []Row {
	_, oldReadings := old.MetricReadings()
	keys, curReadings := cur.MetricReadings()
	var rows []Row
	var tested []int // the rows with a p-value, in order
	for _, k := range keys {
		or, ok := oldReadings[k]
		if !ok {
			continue
		}
		nr := curReadings[k]
		o, n := results.ValuesOf(or), results.ValuesOf(nr)
		m, _ := cur.MetricOf(k.Instrument, k.Metric)
		r := Row{CellKey: k, Unit: m.Unit, Better: m.Better, Old: o, New: n,
			OldMedian: stats.Median(o), NewMedian: stats.Median(n), Bounds: boundsOf(or, nr)}
		r.ChangePct, r.P, r.Q = math.NaN(), math.NaN(), math.NaN()
		if r.Bounds.Any() {
			rows = append(rows, r)
			continue
		}
		if r.OldMedian != 0 {
			r.ChangePct = (r.NewMedian - r.OldMedian) / math.Abs(r.OldMedian) * 100
		}
		_, r.P = stats.MannWhitney(o, n)
		tested = append(tested, len(rows))
		rows = append(rows, r)
	}
	adjust(rows, tested)
	return rows
}

// EnvDiffs lists the environment differences that make a comparison
// meaningless: a different kernel, CPU, congestion control, impairment,
// WAN condition, offloads, the roles' CPUs (--pin), implementation (a fact a transport marks so:
// kernel or userspace WireGuard), a role's host (hostDiffs), instrument duration,
// warm-up, run order or payload (the LAN's, or any condition's scp copy)
// measures something else. So does scp's form (SFTP, the legacy protocol
// or ssh … cat move the payload differently) and what its MB/s divides
// the payload by (scpRateDefinition), when both documents copied; and
// rrul's probe flows (rrulProbeDiffs), per transport both probed.
func EnvDiffs(old, cur *results.Document) []string {
	a, b := old.Env, cur.Env
	var diffs []string
	check := func(name, x, y string) {
		if x != y {
			diffs = append(diffs, fmt.Sprintf("%s %q vs %q", name, x, y))
		}
	}
	check("kernel", a.Kernel, b.Kernel)
	check("cpu", a.CPUModel, b.CPUModel)
	check("cores", strconv.Itoa(a.Cores), strconv.Itoa(b.Cores))
	check("congestion control", a.Congestion, b.Congestion)
	check("impairment", a.Impairment, b.Impairment)
	check("wan", a.WAN, b.WAN)
	check("offloads", a.Offloads, b.Offloads)
	check("roles' cpus", a.Pin.String(), b.Pin.String())
	diffs = append(diffs, factDiffs(a.Facts, b.Facts, true)...)
	diffs = append(diffs, hostDiffs(a.HostsAcross(), b.HostsAcross())...)
	check("scp payload bytes", strconv.FormatInt(a.PayloadBytes(), 10), strconv.FormatInt(b.PayloadBytes(), 10))
	if copies(old) && copies(cur) {
		check("scp form", a.ScpForm, b.ScpForm)
		check("scp MB/s", scpRateDefinition(old), scpRateDefinition(cur))
	}
	diffs = append(diffs, rrulProbeDiffs(old, cur)...)
	sa, sb := settingsOf(old), settingsOf(cur)
	check("duration", sa.duration, sb.duration)
	check("warm-up", sa.warmup, sb.warmup)
	check("order", sa.order, sb.order)
	for _, c := range cur.Conditions {
		for _, o := range old.Conditions {
			if o.Name == c.Name {
				check(textsafe.Quote(c.Name)+" scp payload bytes", strconv.FormatInt(o.ScpPayloadBytes, 10), strconv.FormatInt(c.ScpPayloadBytes, 10))
			}
		}
	}
	return diffs
}

// rrulProbeDiffs lists the transports both documents probed with rrul
// whose probes differ, as the samples' methods name them (the flows,
// headline first: ICMP alone, ICMP beside a TCP_RR flow, TCP_RR alone):
// ICMP figures measured beside TCP_RR's own load are not those measured
// alone. A transport in one document only is not compared.
func rrulProbeDiffs(a, b *results.Document) []string {
	ma, mb := rrulProbes(a), rrulProbes(b)
	var diffs []string
	for _, t := range slices.Sorted(maps.Keys(mb)) {
		if x, ok := ma[t]; ok && x != mb[t] {
			diffs = append(diffs, fmt.Sprintf("rrul probes of %s %q vs %q", textsafe.Quote(t), x, mb[t]))
		}
	}
	return diffs
}

// rrulProbes is, per transport, its rrul samples' distinct methods,
// sorted and joined.
func rrulProbes(d *results.Document) map[string]string {
	by := map[string][]string{}
	for _, s := range d.Samples {
		if s.Instrument == "rrul" && s.Method != "" && !slices.Contains(by[s.Transport], s.Method) {
			by[s.Transport] = append(by[s.Transport], s.Method)
		}
	}
	out := make(map[string]string, len(by))
	for t, ms := range by {
		slices.Sort(ms)
		out[t] = strings.Join(ms, " | ")
	}
	return out
}

// copies reports whether d has scp samples.
func copies(d *results.Document) bool {
	return slices.ContainsFunc(d.Samples, func(s results.Sample) bool { return s.Instrument == "scp" })
}

// scpRateDefinition is what d's scp MB/s divides the payload by: the
// copy's own time, or (the reference's and older documents) the whole
// wall, the SSH connection included, which makes the same copy slower.
func scpRateDefinition(d *results.Document) string {
	if d.ScpTimesCopyApart() {
		return "payload ÷ the copy's own time"
	}
	return "payload ÷ the whole wall, SSH connection included"
}

// settings are how a run measured, as compared.
type settings struct{ duration, warmup, order string }

// settingsOf reads d's duration, warm-up and order. The reference
// harness's documents record none of them: theirs are its fixed 10 s
// instruments, 2 s warm-up and one transport after the other (twnsbench's
// defaults and --order reference). A twnsbench document without a warm-up
// had none (--warmup 0).
func settingsOf(d *results.Document) settings {
	e := d.Env
	if d.SchemaVersion == 0 && e.Harness == "" {
		return settings{duration: "10s", warmup: "2s", order: "reference"}
	}
	order := e.Order
	if order == "" {
		order = "reference"
	}
	sec := func(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) + "s" }
	return settings{duration: sec(e.DurationSec), warmup: sec(e.WarmupSec), order: order}
}

// ToolDiffs lists the programs whose versions differ between the two
// runs (the version facts: tw, OpenSSH, iperf3, …; those on each role's
// host; and the harness) and
// the impairment's mechanism. They do not stop a comparison — comparing
// tw releases is what compare is for — but a reader must see them first.
func ToolDiffs(old, cur *results.Document) []string {
	a, b := old.Env, cur.Env
	diffs := factDiffs(a.Facts, b.Facts, false)
	diffs = append(diffs, hostToolDiffs(a.HostsAcross(), b.HostsAcross())...)
	for _, f := range []struct{ name, x, y string }{
		{"impairment method", a.ImpairmentMethod, b.ImpairmentMethod}, {"harness", a.Harness, b.Harness},
	} {
		if f.x != f.y {
			diffs = append(diffs, fmt.Sprintf("%s %q vs %q", f.name, f.x, f.y))
		}
	}
	return diffs
}

// factDiffs lists the facts whose values differ between a and b (one
// side may lack the fact), of one kind: implementations or versions. A
// fact is an implementation when either side marks it so. Its name is its
// label, in the old document's order, then the new one's.
func factDiffs(a, b results.Facts, implementations bool) []string {
	var diffs []string
	both := append(slices.Clone(a), b...)
	seen := map[string]bool{}
	for _, f := range both {
		if seen[f.Key] {
			continue
		}
		seen[f.Key] = true
		impl := slices.ContainsFunc(both, func(g results.Fact) bool { return g.Key == f.Key && g.Implementation })
		if x, y := a.Get(f.Key), b.Get(f.Key); impl == implementations && x != y {
			diffs = append(diffs, fmt.Sprintf("%s %q vs %q", textsafe.Quote(f.Label), x, y))
		}
	}
	return diffs
}

// Write prints rows as an aligned table with a legend. The names come
// from the documents and are printed through textsafe.Quote.
func Write(w io.Writer, rows []Row) error { return write(w, rows, runsAdvice) }

// write is Write with the advice on what detects a change (more runs, or
// for a sweep more clients) given by advice over the rows tested.
func write(w io.Writer, rows []Row, advice func([]Row) string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "transport\tcondition\tinstrument\tmetric\tunit\told\tnew\tchange\tverdict")
	for _, r := range rows {
		change := "n/a"
		if !math.IsNaN(r.ChangePct) {
			change = fmt.Sprintf("%+.1f %%", r.ChangePct)
		}
		unit := r.Unit
		if unit == "" {
			unit = "-"
		}
		test := fmt.Sprintf("p=%.3f q=%.3f", r.P, r.Q)
		if r.Bounds.Any() {
			test = r.Bounds.String()
		} else if r.Untested != "" {
			test = r.Untested
		}
		q := textsafe.Quote
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s (%s n=%d+%d)\n",
			q(r.Transport), q(r.Condition), q(r.Instrument), q(r.Metric), q(unit),
			r.Bounds.Old.mark()+num(r.OldMedian), r.Bounds.New.mark()+num(r.NewMedian), change, r.Verdict(), test, len(r.Old), len(r.New))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	raw, significant, bounded := 0, 0, false
	var testedRows []Row // the rows with a p-value: what the correction counts
	for _, r := range rows {
		bounded = bounded || r.Bounds.Any()
		if r.tested() {
			testedRows = append(testedRows, r)
		}
		if r.P < Alpha {
			raw++
		}
		if r.Significant {
			significant++
		}
	}
	tested := len(testedRows)
	_, err := fmt.Fprintf(w, "\nMedians; p: two-sided Mann-Whitney U test per row; q: p adjusted for all %d rows by %s.\n"+
		"Chance alone: with nothing changed, about %.1f of %d rows would have p < %.2f; here %d do.\n"+
		"Verdict: significant when q < %.2f (false discovery rate %.0f %%): %d of %d; \"~\" = no significant change.\n%s\n",
		tested, Correction, Alpha*float64(tested), tested, Alpha, raw, Alpha, 100*Alpha, significant, tested, advice(testedRows))
	if err != nil || !bounded {
		return err
	}
	_, err = fmt.Fprintln(w, boundsLegend)
	return err
}

// runsAdvice says whether the rows' runs can detect a change at all: a
// change in one row alone keeps its q = m·p among m rows, so it is called
// significant only when p < α/m, and the smallest p its runs can give
// (complete separation) must be below that. The row with the fewest runs
// is the one named.
func runsAdvice(rows []Row) string {
	return detectAdvice(rows, "runs", func(n, m int) string {
		return fmt.Sprintf("use --runs %d or more on both sides to detect a change among %d rows", n, m)
	})
}

// detectAdvice is runsAdvice over samples called noun, with more saying
// what detects a change: n samples a side among m rows.
func detectAdvice(rows []Row, noun string, more func(n, m int) string) string {
	if len(rows) == 0 {
		return ""
	}
	worst := rows[0]
	for _, r := range rows[1:] {
		if SmallestP(len(r.Old), len(r.New)) > SmallestP(len(worst.Old), len(worst.New)) {
			worst = r
		}
	}
	m := len(rows)
	best := SmallestP(len(worst.Old), len(worst.New))
	s := fmt.Sprintf("A change in one row alone is significant only when its p < %.2f/%d = %.2g; with %d+%d %s (the fewest here) the smallest possible p is %.2g",
		Alpha, m, Alpha/float64(m), len(worst.Old), len(worst.New), noun, best)
	if best*float64(m) < Alpha {
		return s + ": enough."
	}
	return s + ": " + more(RunsToDetect(m), m) + "."
}

// RunsToDetect is the fewest runs per side with which a change in one row
// alone among m rows can be called significant after the
// Benjamini–Hochberg adjustment: SmallestP(n, n)·m < Alpha.
func RunsToDetect(m int) int {
	n := 2
	for SmallestP(n, n)*float64(max(m, 1)) >= Alpha {
		n++
	}
	return n
}

// SmallestP is the smallest two-sided p the exact Mann-Whitney U test
// gives n1 against n2 runs (every run of one side below every run of the
// other, no ties): 2 / C(n1+n2, n1), at most 1.
func SmallestP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	c := 1.0 // C(n1+n2, n1), built as a running product
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return min(1, 2/c)
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v): // a figure not computed
		return "—"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strings.TrimRight(strconv.FormatFloat(v, 'f', 4, 64), "0")
	}
}

// adjust sets the Benjamini–Hochberg q of the rows tested (indices into
// rows) over their p-values, and marks those under Alpha significant.
func adjust(rows []Row, tested []int) {
	ps := make([]float64, len(tested))
	for i, j := range tested {
		ps[i] = rows[j].P
	}
	for i, q := range stats.BenjaminiHochberg(ps) {
		rows[tested[i]].Q = q
		rows[tested[i]].Significant = q < Alpha
	}
}
