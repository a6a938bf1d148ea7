package instrument

import (
	"context"
	"fmt"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// SSHSetup times fresh SSH logins through the path, back to back until
// their wall times add up to the test's duration: each `ssh … true` (the options scp uses, see Exchange)
// opens its own TCP connection, exchanges keys, authenticates, runs true
// and closes — what a user of the tunnel pays per login. Sessions/s is
// logins / their summed wall time; p50 and p99 are of one login's wall.
type SSHSetup struct{}

var _ Instrument = SSHSetup{}

// sshLoginBound is what the last login, started just before the test's
// end, may take in a healthy sample.
const sshLoginBound = 5 * time.Second

func (SSHSetup) Name() string { return "ssh_setup" }
func (SSHSetup) Tool() string { return "ssh" }

func (SSHSetup) Metrics() []results.Metric {
	return []results.Metric{
		{Key: "value", Label: "SSH login rate (fresh `ssh … true`, one after another)", Unit: "sessions/s", Better: results.BetterHigher},
		{Key: "p50_sec", Label: "SSH login p50", Unit: "s", Better: results.BetterLower},
		{Key: "p99_sec", Label: "SSH login p99", Unit: "s", Better: results.BetterLower},
		{Key: results.TransportCPUPerTrans, Label: "tunnel's own CPU per SSH login", Unit: "CPU-µs/login", Better: results.BetterLower},
	}
}

func (SSHSetup) Needs() Needs {
	return Needs{Services: []transport.Service{transport.ServiceSSH}, Carries: transport.CarriesTCP}
}

func (SSHSetup) Measure(ctx context.Context, job *Job) (Measurement, error) {
	var walls []time.Duration
	var total time.Duration
	for len(walls) == 0 || total < job.Duration {
		w, err := login(ctx, job)
		if err != nil {
			return Measurement{}, fmt.Errorf("login %d: %w", len(walls)+1, err)
		}
		walls, total = append(walls, w), total+w
	}
	s := summariseLogins(walls)
	return Measurement{
		Value:   s.Rate,
		Unit:    "sessions/s",
		WallSec: total.Seconds(),
		Extra:   map[string]float64{"p50_sec": s.P50, "p99_sec": s.P99, "logins": float64(len(walls)), results.Transactions: float64(len(walls))},
	}, nil
}

// Budget is the test's duration and one more login.
func (SSHSetup) Budget(job *Job) Budget {
	return Budget{Planned: job.Duration + sshLoginBound,
		Basis: "its " + fmtSeconds(job.Duration) + " of logins and " + fmtSeconds(sshLoginBound) + " for the last"}
}

// loginSummary is what SSHSetup reports of its logins.
type loginSummary struct {
	Rate     float64 // logins per second of their summed wall time
	P50, P99 float64 // seconds
}

// summariseLogins reads walls (at least one) as back-to-back logins.
func summariseLogins(walls []time.Duration) loginSummary {
	var total time.Duration
	secs := make([]float64, len(walls))
	for i, w := range walls {
		total += w
		secs[i] = w.Seconds()
	}
	return loginSummary{
		Rate: float64(len(walls)) / total.Seconds(),
		P50:  stats.Quantile(secs, 0.5),
		P99:  stats.Quantile(secs, 0.99),
	}
}
