package instrument

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// TCPRR is netperf's TCP_RR with 64-byte requests and responses and pinned
// data ports (local 12867, remote 12866), so a port-forwarding transport
// can map them: transactions/s plus mean, p50 and p99 latency in µs.
type TCPRR struct{}

var _ Instrument = TCPRR{}

func (TCPRR) Name() string { return "tcp_rr" }
func (TCPRR) Tool() string { return "netperf" }

func (TCPRR) Metrics() []results.Metric {
	return []results.Metric{
		{Key: "value", Label: "transactions", Unit: "trans/s", Better: results.BetterHigher},
		{Key: "p50_us", Label: "p50 latency", Unit: "µs", Better: results.BetterLower},
		{Key: "p99_us", Label: "p99 latency", Unit: "µs", Better: results.BetterLower},
		{Key: results.TransportCPUPerTrans, Label: "tunnel's own CPU per transaction", Unit: "CPU-µs/trans", Better: results.BetterLower},
	}
}

func (TCPRR) Needs() Needs {
	return Needs{Services: []transport.Service{transport.ServiceNetperf, transport.ServiceNetperfData}, Carries: transport.CarriesTCP}
}

func (r TCPRR) Measure(ctx context.Context, job *Job) (Measurement, error) {
	return measureNetperfRR(ctx, job, "TCP_RR", "trans/s", "transactions")
}

// measureNetperfRR runs netperf's request/response test (TCP_RR or
// TCP_CRR) with netperfRRArgs and reads its CSV line; unit and what name
// its rate.
func measureNetperfRR(ctx context.Context, job *Job, test, unit, what string) (Measurement, error) {
	res, err := job.Run(ctx, "netperf", netperfRRArgs(job, test)...)
	rr, perr := parseNetperfRR(res.Stdout)
	if perr != nil {
		return Measurement{}, perr
	}
	if err != nil {
		return Measurement{}, fmt.Errorf("netperf: %w: %s", err, parseFirstLine(res.Stderr))
	}
	if rr.TransPerSec <= 0 {
		return Measurement{}, nothing("netperf %s reported %g %s/s (mean latency %g µs): no request was answered",
			test, rr.TransPerSec, what, rr.MeanLatencyUs)
	}
	return Measurement{
		Value:   rr.TransPerSec,
		Unit:    unit,
		WallSec: res.Wall.Seconds(),
		MeanUs:  ptr(rr.MeanLatencyUs),
		P50Us:   ptr(rr.P50LatencyUs),
		P99Us:   ptr(rr.P99LatencyUs),
		Extra:   map[string]float64{results.Transactions: netperfTransactions(rr.TransPerSec, job.Duration)},
	}, nil
}

// netperfTransactions is how many transactions a netperf test of d at
// rate per second completed: netperf reports the rate over its test's
// length, the whole seconds -l asked for (seconds).
func netperfTransactions(rate float64, d time.Duration) float64 {
	s, _ := strconv.Atoi(seconds(d))
	return rate * float64(s)
}

// Budget is the test's duration.
func (TCPRR) Budget(job *Job) Budget { return timeBound(job.Duration) }

// Args is the tool's command line after the program name.
func (TCPRR) Args(job *Job) []string { return netperfRRArgs(job, "TCP_RR") }

// netperfRRArgs is netperf's command line for test (TCP_RR, TCP_CRR): 64-byte
// requests and responses, the pinned data ports, the CSV line alone.
func netperfRRArgs(job *Job, test string) []string { return netperfRRSizedArgs(job, test, 64) }

// netperfRRSizedArgs is netperfRRArgs with requests and responses of size
// bytes.
func netperfRRSizedArgs(job *Job, test string, size int) []string {
	return []string{"-H", job.Target.Host, "-p", strconv.Itoa(job.Target.Port(transport.ServiceNetperf)),
		"-t", test, "-l", seconds(job.Duration), "-P", "0", "--",
		"-r", itoa(size) + "," + itoa(size), "-P", strconv.Itoa(transport.NetperfLocalPort) + "," + strconv.Itoa(job.Target.Port(transport.ServiceNetperfData)),
		"-o", "THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY"}
}
