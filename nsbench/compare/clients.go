package compare

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// clientsInstrument names a sweep's rows in the table's instrument column.
const clientsInstrument = "clients"

// The reasons a sweep's row is not tested.
const (
	untestedOneSweep = "one sweep per side: clients are not repeats"
	untestedFew      = "fewer than 3 sweeps a side"
	untestedFairness = "one index per side"
	untestedMissing  = "a client not measured"
)

// minSweeps is the fewest sweeps a side whose figures are tested.
const minSweeps = 3

// ClientsRows compares two many-client sweeps per transport and client
// count both measured, in the new sweep's order: the aggregate and Jain's
// fairness index. Each is one figure per sweep: a sweep's clients are not
// repeats of it (what drifts between two sweeps moves every client
// together), so a row is tested only over repeated sweeps (run --clients
// --runs), at least minSweeps a side: Mann-Whitney over the sweeps'
// figures, adjusted with every other row's by Benjamini–Hochberg as Rows
// does. With fewer the change is shown, not tested. A side with a client
// not measured (stats.SummarizeClients) has only a lower bound for its
// aggregate and no index: neither row is tested.
func ClientsRows(old, cur *results.Clients) []Row {
	var rows []Row
	var tested []int
	for _, n := range cur.Rows {
		so, sn := figuresOf(old, n), figuresOf(cur, n)
		if so.sweeps() == 0 || sn.sweeps() == 0 {
			continue
		}
		key := results.CellKey{Transport: n.Transport, Condition: condition(n), Instrument: clientsInstrument}
		agg := Row{CellKey: key, Unit: "Mbit/s", Better: results.BetterHigher, Old: so.aggregates, New: sn.aggregates,
			OldMedian: stats.Median(so.aggregates), NewMedian: stats.Median(sn.aggregates)}
		agg.Metric = "aggregate"
		agg.Bounds.Old.MedianBound, agg.Bounds.New.MedianBound = so.missing, sn.missing // "≥": the measured clients' sum
		fair := Row{CellKey: key, Unit: "Jain", Better: results.BetterHigher, Old: so.fairness, New: sn.fairness,
			OldMedian: so.medianFairness(), NewMedian: sn.medianFairness()}
		fair.Metric = "fairness"
		for _, r := range []*Row{&agg, &fair} {
			r.ChangePct, r.P, r.Q = relChange(r.OldMedian, r.NewMedian), math.NaN(), math.NaN()
			if r.Untested = untestedReason(so, sn, r.Metric); r.Untested == "" {
				_, r.P = stats.MannWhitney(r.Old, r.New)
				tested = append(tested, len(rows))
			}
			rows = append(rows, *r)
		}
		if so.missing || sn.missing {
			rows[len(rows)-2].ChangePct = math.NaN() // the aggregate's, from a bound: no change to state
		}
	}
	adjust(rows, tested)
	return rows
}

// condition is a row's client count, under its WAN condition when it has
// one.
func condition(r results.ClientsRow) string {
	if r.Condition != "" {
		return r.Condition + " N=" + strconv.Itoa(r.N)
	}
	return "N=" + strconv.Itoa(r.N)
}

// untestedReason is why a row of metric over the sweeps' figures o and n
// has no test, or "" when it has one.
func untestedReason(o, n sweepFigures, metric string) string {
	switch {
	case o.missing || n.missing:
		return untestedMissing
	case o.sweeps() == 1 && n.sweeps() == 1 && metric == "fairness":
		return untestedFairness
	case o.sweeps() == 1 && n.sweeps() == 1:
		return untestedOneSweep
	case min(o.sweeps(), n.sweeps()) < minSweeps:
		return untestedFew
	}
	return ""
}

// sweepFigures are one side's figures at a transport and client count,
// one per sweep that measured a client.
type sweepFigures struct {
	aggregates, fairness []float64
	missing              bool // a sweep with a client not measured
}

func (f sweepFigures) sweeps() int { return len(f.aggregates) }

// medianFairness is NaN when a sweep has no index: the median of the
// others would pass for the side's.
func (f sweepFigures) medianFairness() float64 {
	if f.missing {
		return math.NaN()
	}
	return stats.Median(f.fairness)
}

// figuresOf reduces every sweep of c that measured a client of like's
// transport at its client count under its condition.
func figuresOf(c *results.Clients, like results.ClientsRow) sweepFigures {
	var f sweepFigures
	for _, r := range sweepsOf(c, like) {
		s := stats.SummarizeClients(r.N, r.PerClientMbps)
		f.aggregates, f.fairness = append(f.aggregates, s.Aggregate), append(f.fairness, s.Fairness)
		f.missing = f.missing || s.Missing > 0
	}
	return f
}

// sweepsOf is c's measurements of like's transport, client count and
// condition that measured a client: one per run of the sweep
// (results.ClientsRow.Sweeps).
func sweepsOf(c *results.Clients, like results.ClientsRow) []results.ClientsRow {
	var out []results.ClientsRow
	for _, row := range c.Rows {
		if row.Transport != like.Transport || row.N != like.N || row.Condition != like.Condition {
			continue
		}
		for _, r := range row.Sweeps() {
			if r.Error == "" && len(r.PerClientMbps) > 0 {
				out = append(out, r)
			}
		}
	}
	return out
}

// relChange is (y − x) / |x| × 100, NaN from 0 or from a figure not computed.
func relChange(x, y float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsNaN(y) {
		return math.NaN()
	}
	return (y - x) / math.Abs(x) * 100
}

// ClientsEnvDiffs lists what makes two sweeps measure different things:
// another kernel, CPU or core count, another stream duration, or other
// WAN conditions (or another mechanism making them).
func ClientsEnvDiffs(old, cur *results.Clients) []string {
	var diffs []string
	for _, f := range []struct{ name, x, y string }{
		{"kernel", old.Env.Kernel, cur.Env.Kernel},
		{"cpu", old.Env.CPUModel, cur.Env.CPUModel},
		{"cores", strconv.Itoa(old.Env.Cores), strconv.Itoa(cur.Env.Cores)},
		{"duration", strconv.FormatFloat(old.DurationSec, 'f', -1, 64) + "s", strconv.FormatFloat(cur.DurationSec, 'f', -1, 64) + "s"},
		{"wan", old.Env.WAN, cur.Env.WAN},
		{"impairment", old.Env.ImpairmentMethod, cur.Env.ImpairmentMethod},
	} {
		if f.x != f.y {
			diffs = append(diffs, fmt.Sprintf("%s %q vs %q", f.name, f.x, f.y))
		}
	}
	return diffs
}

// WriteClients prints a sweep's rows as Write does, with what it takes to
// detect a change: repeated sweeps.
func WriteClients(w io.Writer, rows []Row) error {
	if err := write(w, rows, clientsAdvice); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "aggregate: the clients' sum; fairness: Jain's index. Each is one figure per sweep, n counts sweeps: "+
		"a sweep's clients are not repeats of it (what drifts between two sweeps moves them all), so a change is tested over repeated sweeps only "+
		"(run --clients --runs %d or more on both sides), and with fewer it is shown, not tested. "+
		"A side with a client not measured has a lower bound for its aggregate and no index: not tested.\n", minSweeps)
	return err
}

// clientsAdvice is runsAdvice for sweeps, where a row's samples are the
// repeats of the sweep.
func clientsAdvice(rows []Row) string {
	if len(rows) == 0 {
		return fmt.Sprintf("No row could be tested: a sweep's figures are tested over its repeats (run --clients --runs %d or more on both sides).", minSweeps)
	}
	return detectAdvice(rows, "sweeps", func(n, m int) string {
		return fmt.Sprintf("use run --clients --runs %d or more on both sides to detect a change among %d rows", n, m)
	})
}
