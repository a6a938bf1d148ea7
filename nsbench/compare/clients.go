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
	untestedFairness = "one index per side"
	untestedMissing  = "a client not measured"
)

// ClientsRows compares two many-client sweeps per transport and client
// count both measured, in the new sweep's order: the aggregate and Jain's
// fairness index. At one count the aggregate moves with the clients'
// rates, so its row's medians are the sums and its p the clients' rates'
// (Mann-Whitney, N against N), adjusted with every other row's by
// Benjamini–Hochberg as Rows does. A fairness index is one value per side:
// its change is shown, not tested. A side with a client not measured
// (stats.SummarizeClients) has only a lower bound for its aggregate and no
// index: neither row is tested.
func ClientsRows(old, cur *results.Clients) []Row {
	var rows []Row
	var tested []int
	for _, n := range cur.Rows {
		o, ok := clientsRowOf(old, n.Transport, n.N)
		if !ok || n.Error != "" || len(n.PerClientMbps) == 0 {
			continue
		}
		so, sn := stats.SummarizeClients(o.N, o.PerClientMbps), stats.SummarizeClients(n.N, n.PerClientMbps)
		key := results.CellKey{Transport: n.Transport, Condition: "N=" + strconv.Itoa(n.N), Instrument: clientsInstrument}
		agg := Row{CellKey: key, Unit: "Mbit/s", Better: results.BetterHigher, Old: o.PerClientMbps, New: n.PerClientMbps,
			OldMedian: so.Aggregate, NewMedian: sn.Aggregate}
		agg.Metric = "aggregate"
		agg.ChangePct, agg.P, agg.Q = relChange(so.Aggregate, sn.Aggregate), math.NaN(), math.NaN()
		agg.Bounds.Old.MedianBound, agg.Bounds.New.MedianBound = so.Missing > 0, sn.Missing > 0 // "≥": the measured clients' sum
		if so.Missing+sn.Missing > 0 {
			agg.Untested, agg.ChangePct = untestedMissing, math.NaN() // from a bound: no change to state
		} else {
			_, agg.P = stats.MannWhitney(o.PerClientMbps, n.PerClientMbps)
			tested = append(tested, len(rows))
		}
		rows = append(rows, agg)
		fair := Row{CellKey: key, Unit: "Jain", Better: results.BetterHigher, Old: []float64{so.Fairness}, New: []float64{sn.Fairness},
			OldMedian: so.Fairness, NewMedian: sn.Fairness, Untested: untestedFairness}
		fair.Metric = "fairness"
		fair.ChangePct, fair.P, fair.Q = relChange(so.Fairness, sn.Fairness), math.NaN(), math.NaN()
		if math.IsNaN(so.Fairness) || math.IsNaN(sn.Fairness) {
			fair.Untested = untestedMissing
		}
		rows = append(rows, fair)
	}
	adjust(rows, tested)
	return rows
}

// clientsRowOf is c's row of transport at n clients that measured a
// client.
func clientsRowOf(c *results.Clients, transport string, n int) (results.ClientsRow, bool) {
	for _, r := range c.Rows {
		if r.Transport == transport && r.N == n && r.Error == "" && len(r.PerClientMbps) > 0 {
			return r, true
		}
	}
	return results.ClientsRow{}, false
}

// relChange is (y − x) / |x| × 100, NaN from 0 or from a figure not computed.
func relChange(x, y float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsNaN(y) {
		return math.NaN()
	}
	return (y - x) / math.Abs(x) * 100
}

// ClientsEnvDiffs lists what makes two sweeps measure different things:
// another kernel, CPU or core count, or another stream duration.
func ClientsEnvDiffs(old, cur *results.Clients) []string {
	var diffs []string
	for _, f := range []struct{ name, x, y string }{
		{"kernel", old.Env.Kernel, cur.Env.Kernel},
		{"cpu", old.Env.CPUModel, cur.Env.CPUModel},
		{"cores", strconv.Itoa(old.Env.Cores), strconv.Itoa(cur.Env.Cores)},
		{"duration", strconv.FormatFloat(old.DurationSec, 'f', -1, 64) + "s", strconv.FormatFloat(cur.DurationSec, 'f', -1, 64) + "s"},
	} {
		if f.x != f.y {
			diffs = append(diffs, fmt.Sprintf("%s %q vs %q", f.name, f.x, f.y))
		}
	}
	return diffs
}

// WriteClients prints a sweep's rows as Write does, with what it takes to
// detect a change at these counts.
func WriteClients(w io.Writer, rows []Row) error {
	if err := write(w, rows, clientsAdvice); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "aggregate: the clients' sum; its p compares their rates, N against N. fairness: Jain's index, one per side, not tested. "+
		"A side with a client not measured has a lower bound for its aggregate and no index: not tested.")
	return err
}

// clientsAdvice is runsAdvice for a sweep, where a row's samples are its
// clients.
func clientsAdvice(rows []Row) string {
	if len(rows) == 0 {
		return "No row could be tested."
	}
	return detectAdvice(rows, "clients", func(n, m int) string {
		return fmt.Sprintf("no change can be called at so few clients (%d a side and more can, among %d rows)", n, m)
	})
}
