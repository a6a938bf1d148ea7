package nsbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// GoResponsivenessEnv names goresponsiveness's path; without it the
// cross-check looks at GoResponsivenessPath.
const GoResponsivenessEnv = "TWNSBENCH_GORESPONSIVENESS"

// GoResponsivenessPath is where docs/instruments.md builds it, outside
// the repository (GPL-2.0-or-later: run, never linked).
const GoResponsivenessPath = "/var/cache/twnsbench/goresponsiveness/" + instrument.GoResponsivenessTool

// RPMCrossOptions configure selfcheck's RPM cross-check.
type RPMCrossOptions struct {
	// Tool is goresponsiveness's path; "" skips the cross-check for
	// Skipped's reason.
	Tool, Skipped string
	Runs          int           // pairs, alternating which client goes first
	Connections   int           // load-generating connections per direction, both clients
	Limit         time.Duration // each client's time limit
}

// FindGoResponsiveness is the cross-check's tool: $TWNSBENCH_GORESPONSIVENESS,
// else GoResponsivenessPath, when it is an executable file; otherwise ""
// and why. root runs it, so the variable is refused (err) when the file
// or a directory above it is not root's alone (proc.RootsPath).
func FindGoResponsiveness() (path, why string, err error) {
	path, from := os.Getenv(GoResponsivenessEnv), "$"+GoResponsivenessEnv
	if path == "" {
		path, from = GoResponsivenessPath, "the default path"
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fmt.Sprintf("goresponsiveness not found (%s, %s: %v); docs/instruments.md says how to build it", from, path, errors.Unwrap(err)), nil
	case st.IsDir() || st.Mode()&0o111 == 0:
		return "", fmt.Sprintf("goresponsiveness at %s (%s) is not an executable file", path, from), nil
	}
	if from != "the default path" {
		if err := proc.RootsPath(GoResponsivenessEnv, path); err != nil {
			return "", "", err
		}
	}
	return path, "", nil
}

// rpmCrossCheck measures twnsbench's RPM client (through the harness) and
// goresponsiveness (as a bare command under `ip netns exec`) against the
// same rpm fixture on the plain path, pair by pair, each pair's order
// alternating, both capped at the same number of connections.
func rpmCrossCheck(ctx context.Context, tb *testbed, o RPMCrossOptions, logf Logf) (*results.RPMCrossCheck, error) {
	c := &results.RPMCrossCheck{Tool: o.Tool, Skipped: o.Skipped, Connections: o.Connections, LimitSec: o.Limit.Seconds()}
	if o.Tool == "" {
		return c, nil
	}
	direct := tb.direct()
	target := direct.Target
	args := instrument.GoResponsivenessArgs(net.JoinHostPort(target.Host, strconv.Itoa(target.Port(transport.ServiceRPM))), o.Connections, o.Limit)
	c.Args = strings.Join(args, " ")
	ours := instrument.RPM{MaxConnections: o.Connections}
	job := tb.job(direct)
	job.Duration = o.Limit
	bare := bareRun(tb.spec.NetnsName(topology.Client))
	for pair := 0; pair < o.Runs; pair++ {
		var run results.RPMCrossRun
		for i := range 2 {
			if _, err := tb.waitQuiet(ctx, ours); err != nil {
				return nil, err
			}
			if (pair+i)%2 == 0 {
				m, err := instrument.MeasureBounded(ctx, ours, job)
				if err != nil {
					return nil, fmt.Errorf("rpm cross-check pair %d (twnsbench): %w", pair+1, err)
				}
				oursRun(&run, m)
				continue
			}
			r, err := runGoResponsiveness(ctx, bare, o.Tool, args, o.Limit)
			if err != nil {
				return nil, fmt.Errorf("rpm cross-check pair %d: %w", pair+1, err)
			}
			theirsRun(&run, r)
		}
		c.Runs = append(c.Runs, run)
		logf("selfcheck rpm pair %d/%d: twnsbench %.0f RPM, goresponsiveness %.0f (%.0f by the draft's formula)", pair+1, o.Runs, run.Ours, run.Theirs, run.TheirsDraft)
	}
	return c, nil
}

// runGoResponsiveness runs its command line within its own bound: each of
// its stages may take the limit, and one whose throughput is not stable
// 15 s more.
func runGoResponsiveness(ctx context.Context, run func(context.Context, string, ...string) (proc.Result, error), tool string, args []string, limit time.Duration) (instrument.GoResponsivenessReport, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*limit+45*time.Second)
	defer cancel()
	res, err := run(ctx, tool, args...)
	if err != nil {
		return instrument.GoResponsivenessReport{}, fmt.Errorf("%s: %w: %s", instrument.GoResponsivenessTool, err, strings.TrimSpace(string(res.Stderr)))
	}
	return instrument.ParseGoResponsiveness(res.Stdout)
}

// oursRun and theirsRun fill a pair's figures from each client's: the
// foreign probe per round trip is (TCP + TLS + HTTP) / 3 in both.
func oursRun(run *results.RPMCrossRun, m instrument.Measurement) {
	x := m.Extra
	run.Ours, run.OursSelfMs = m.Value, x["http_l_ms"]
	run.OursForeignMs = (x["tcp_f_ms"] + x["tls_f_ms"] + x["http_f_ms"]) / 3
	run.OursMbps = x["download_mbps"] + x["upload_mbps"]
}

func theirsRun(run *results.RPMCrossRun, r instrument.GoResponsivenessReport) {
	run.Theirs, run.TheirsDraft = r.RPM, r.DraftRPM()
	run.TheirsSelfMs, run.TheirsForeignMs = r.SelfMs, r.ForeignMs
	run.TheirsMbps, run.TheirsStable = r.DownloadMbps+r.UploadMbps, r.ThroughputStable
}
