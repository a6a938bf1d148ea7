package instrument

import (
	"context"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// TCPCRR is netperf's TCP_CRR: per transaction a new TCP connection, one
// 64-byte request and response, and the close — the cost of every
// connection a user opens through the path (an HTTP request without
// keep-alive, a database client without a pool). Connections/s plus mean,
// p50 and p99 of one connect + request + response + close in µs.
//
// The remote data port is pinned as TCP_RR's (a port-forwarding transport
// maps it). netperf binds each new connection's local port itself,
// counting up from 5000 and wrapping below 65535 (seen on netperf 2.7.0:
// a 10 s run at ~10,000 connections/s wraps once and holds its rate); the
// TIME_WAIT of each connection is the server side's, which takes a new SYN
// on a reused 4-tuple, so the wrap costs nothing on this kind of host.
type TCPCRR struct{}

var _ Instrument = TCPCRR{}

func (TCPCRR) Name() string { return "tcp_crr" }
func (TCPCRR) Tool() string { return "netperf" }

func (TCPCRR) Metrics() []results.Metric {
	return []results.Metric{
		{Key: "value", Label: "connection set-up rate (connect, 64 B request/response, close)", Unit: "conn/s", Better: results.BetterHigher},
		{Key: "p50_us", Label: "connect+request+response+close p50", Unit: "µs", Better: results.BetterLower},
		{Key: "p99_us", Label: "connect+request+response+close p99", Unit: "µs", Better: results.BetterLower},
		{Key: results.TransportCPUPerTrans, Label: "tunnel's own CPU per connection (connect, request/response, close)", Unit: "CPU-µs/conn", Better: results.BetterLower},
	}
}

func (TCPCRR) Needs() Needs {
	return Needs{Services: []transport.Service{transport.ServiceNetperf, transport.ServiceNetperfData}, Carries: transport.CarriesTCP}
}

func (TCPCRR) Measure(ctx context.Context, job *Job) (Measurement, error) {
	return measureNetperfRR(ctx, job, "TCP_CRR", "conn/s", "connections")
}

// crrWindDown is what netperf TCP_CRR takes after its test: netserver,
// which cannot tell when the client stops opening connections, answers
// with its results only when its own timer (the test's length plus
// netperf's PAD_TIME, 4 s) runs out. Seen: a 2 s test takes 6.0 s.
const crrWindDown = 4 * time.Second

// Budget is the test's duration and netserver's wind-down.
func (TCPCRR) Budget(job *Job) Budget {
	return Budget{Planned: job.Duration + crrWindDown,
		Basis: "its " + fmtSeconds(job.Duration) + " test and netserver's " + fmtSeconds(crrWindDown) + " wind-down"}
}

// Args is the tool's command line after the program name: TCP_RR's with
// -t TCP_CRR.
func (TCPCRR) Args(job *Job) []string { return netperfRRArgs(job, "TCP_CRR") }
