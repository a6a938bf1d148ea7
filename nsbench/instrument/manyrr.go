package instrument

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/manyrr"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// ManyRR is many connections at once: Conns TCP connections to the
// server's many-rr fixture, each closed-loop (one 64-byte request in
// flight, a 64-byte response, the next request; pgbench-shaped) for the
// test's duration, run by twnsbench's own client (manyrr). Transactions/s
// in total and per connection, p50/p99/p99.9 of one transaction (µs) over
// every connection's, and Jain's fairness index of the connections'
// transaction counts. A Go client and server rather than N netperf
// processes: one process holds all the latencies (p99.9 across
// connections), and a port-forwarding transport maps one port, not N.
//
// A transaction still in flight when the test ends is awaited for
// manyrr.Drain; one still unanswered then is censored, not dropped: its
// wait so far joins the latencies as a lower bound (manyrr.Report), so a
// stalled connection raises the tail it reaches, which is then a lower
// bound in turn (results.AtLeastKey), and censored_wait_ms says how long
// it waited.
type ManyRR struct{ Conns int }

var _ Instrument = ManyRR{}

// SelfTool, as Job.Run's program name, runs twnsbench itself in the role;
// the first argument is its subcommand.
const SelfTool = "twnsbench"

func (ManyRR) Name() string { return "many_rr" }
func (ManyRR) Tool() string { return manyrr.ClientArg }

func (r ManyRR) Metrics() []results.Metric {
	n := strconv.Itoa(r.Conns)
	return []results.Metric{
		{Key: "value", Label: "transactions, " + n + " connections at once (total)", Unit: "trans/s", Better: results.BetterHigher},
		{Key: "per_conn_tps", Label: "transactions per connection (mean of " + n + ")", Unit: "trans/s", Better: results.BetterHigher},
		{Key: "p50_us", Label: n + " connections: transaction p50", Unit: "µs", Better: results.BetterLower, CensoredBy: results.AtLeastKey("p50_us")},
		{Key: "p90_us", Label: n + " connections: transaction p90", Unit: "µs", Better: results.BetterLower, CensoredBy: results.AtLeastKey("p90_us")},
		{Key: "p99_us", Label: n + " connections: transaction p99", Unit: "µs", Better: results.BetterLower, CensoredBy: results.AtLeastKey("p99_us")},
		{Key: "p999_us", Label: n + " connections: transaction p99.9", Unit: "µs", Better: results.BetterLower, CensoredBy: results.AtLeastKey("p999_us")},
		{Key: "jain", Label: "Jain's fairness index across the " + n + " connections (1 = equal)", Unit: "index", Better: results.BetterHigher},
		{Key: results.TransportCPUPerTrans, Label: "tunnel's own CPU per transaction, " + n + " connections at once", Unit: "CPU-µs/trans", Better: results.BetterLower},
		{Key: "in_flight", Label: "transactions still unanswered " + manyrr.Drain.String() + " after the test's end (censored)", Unit: "transactions", Better: results.BetterLower},
		{Key: results.CensoredWaitMs, Label: "censored: the longest wait of a transaction still unanswered after the test, a lower bound of its latency", Unit: "ms", CensoredBy: results.CensoredWaitMs},
	}
}

func (ManyRR) Needs() Needs {
	return Needs{Services: []transport.Service{transport.ServiceManyRR}, Carries: transport.CarriesTCP}
}

func (r ManyRR) Measure(ctx context.Context, job *Job) (Measurement, error) {
	res, err := job.Run(ctx, SelfTool, r.Args(job)...)
	if err != nil {
		return Measurement{}, fmt.Errorf("%s: %w: %s", manyrr.ClientArg, err, parseFirstLine(res.Stderr))
	}
	rep, err := parseManyRR(res.Stdout, r.Conns)
	if err != nil {
		return Measurement{}, err
	}
	f := manyRRFigures(rep)
	if f.Total <= 0 {
		return Measurement{}, nothing("%s reported 0 transactions on %d connections in %.1f s", manyrr.ClientArg, rep.Conns, rep.DurationSec)
	}
	extra := map[string]float64{"per_conn_tps": f.PerConn, "p90_us": rep.P90Us, "p999_us": rep.P999Us, "jain": f.Jain, "min_conn_tps": f.MinConn,
		"in_flight": float64(len(rep.InFlightUs)), results.Transactions: f.Total * rep.DurationSec}
	for _, w := range rep.InFlightUs {
		extra[results.CensoredWaitMs] = max(extra[results.CensoredWaitMs], w/1000)
	}
	for _, key := range rep.AtLeast {
		extra[results.AtLeastKey(key)] = 1
	}
	return Measurement{
		Value:   f.Total,
		Unit:    "trans/s",
		WallSec: res.Wall.Seconds(),
		MeanUs:  ptr(rep.MeanUs),
		P50Us:   ptr(rep.P50Us),
		P99Us:   ptr(rep.P99Us),
		Extra:   extra,
	}, nil
}

// Budget is the test's duration and the drain of its last transactions.
func (ManyRR) Budget(job *Job) Budget {
	d := job.Duration + manyrr.Drain
	return Budget{Planned: d, Basis: "its " + fmtSeconds(job.Duration) + " test and " + fmtSeconds(manyrr.Drain) + " for its last transactions (" + fmtSeconds(d) + ")"}
}

// Args is the command line after SelfTool.
func (r ManyRR) Args(job *Job) []string {
	addr := net.JoinHostPort(job.Target.Host, strconv.Itoa(job.Target.Port(transport.ServiceManyRR)))
	return []string{manyrr.ClientArg, "--addr", addr, "--conns", strconv.Itoa(r.Conns), "--duration", job.Duration.String()}
}
