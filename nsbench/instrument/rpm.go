package instrument

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/rpm"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// RPM is responsiveness under working conditions, after
// draft-ietf-ippm-responsiveness-08, run by twnsbench's own client (rpm)
// against its Responsiveness Test server (HTTP/2 over TLS 1.3): HTTP/2
// downloads and uploads on load-generating connections load the path
// while foreign probes (a new connection each: TCP handshake, TLS
// handshake, HTTP GET of 1 byte) and self probes (the same GET on a
// load-generating connection) measure round trips; RPM = 60000 ms over
// them (the mean of the foreign and the loaded responsiveness, each of
// single-sided 95 % trimmed means), with its p90 variant and the
// components. The draft's stopping rule may end the test before the
// sample's duration, its time limit; the sample says which (converged),
// and one the time limit ended is kept out of cells and verdicts
// (results.NotConverged).
type RPM struct {
	// MaxConnections, when positive, caps the load-generating connections
	// per direction (the draft's MNP; 0 is the draft's 16): selfcheck's
	// cross-check gives both clients the same cap.
	MaxConnections int
}

var _ Instrument = RPM{}

func (RPM) Name() string { return "rpm" }
func (RPM) Tool() string { return rpm.ClientArg }

func (RPM) Metrics() []results.Metric {
	ms := func(key, label string) results.Metric {
		return results.Metric{Key: key, Label: label, Unit: "ms", Better: results.BetterLower}
	}
	return []results.Metric{
		{Key: "value", Label: "responsiveness under working conditions (RPM, trimmed means)", Unit: "RPM", Better: results.BetterHigher},
		{Key: "rpm_p90", Label: "responsiveness under working conditions, p90 variant", Unit: "RPM", Better: results.BetterHigher},
		ms("tcp_f_ms", "RPM foreign probe: TCP handshake (tcp_f, trimmed mean)"),
		ms("tls_f_ms", "RPM foreign probe: TLS 1.3 handshake (tls_f, trimmed mean)"),
		ms("http_f_ms", "RPM foreign probe: HTTP/2 GET (http_f, trimmed mean)"),
		ms("http_l_ms", "RPM self probe: HTTP/2 GET on a load-generating connection (http_l, trimmed mean)"),
		{Key: "download_mbps", Label: "RPM working conditions: download goodput", Unit: "Mbit/s", Better: results.BetterHigher},
		{Key: "upload_mbps", Label: "RPM working conditions: upload goodput", Unit: "Mbit/s", Better: results.BetterHigher},
	}
}

func (RPM) Needs() Needs {
	return Needs{Services: []transport.Service{transport.ServiceRPM}, Carries: transport.CarriesTCP}
}

func (r RPM) Measure(ctx context.Context, job *Job) (Measurement, error) {
	res, err := job.Run(ctx, SelfTool, r.Args(job)...)
	if err != nil {
		return Measurement{}, fmt.Errorf("%s: %w: %s", rpm.ClientArg, err, parseFirstLine(res.Stderr))
	}
	rep, err := parseRPM(res.Stdout)
	if err != nil {
		return Measurement{}, err
	}
	return rpmMeasurement(rep, res.Wall.Seconds()), nil
}

// Budget is the test's duration: the client's time limit.
func (RPM) Budget(job *Job) Budget { return timeBound(job.Duration) }

// Args is the command line after SelfTool.
func (r RPM) Args(job *Job) []string {
	args := []string{rpm.ClientArg, "--addr", r.addr(job), "--duration", job.Duration.String()}
	if r.MaxConnections > 0 {
		args = append(args, "--mnp", strconv.Itoa(r.MaxConnections))
	}
	return args
}

func (RPM) addr(job *Job) string {
	return net.JoinHostPort(job.Target.Host, strconv.Itoa(job.Target.Port(transport.ServiceRPM)))
}
