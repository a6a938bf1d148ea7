package main

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/fanout"
	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// clientsFlag is run's --clients: the many-client sweep instead of the
// instruments' cells.
func clientsFlag() cli.Flag {
	return &cli.StringFlag{Name: "clients", Usage: fmt.Sprintf("many clients on one server instead of the instruments: comma-separated client counts (1 to %d), e.g. 1,2,4,8 — per count, that many client namespaces each with its own path through the transport (Pure SSH: an SSH session each; WireGuard: a peer each; OpenVPN TLS: a client each of one server; tw: a tw client each through one relay and one tw server) and one iperf3 stream each for --duration, all at once; builds (NAME@LABEL with --build) are swept side by side, count by count in alternating order, with a verdict per count (not setting the exit code); --runs K runs the whole sweep K times, for compare to test its figures over (3 or more a side; 5 to detect a change among a few rows); with --wan, on the LAN and then under each condition, every client's path crossing the same emulated WAN to the server, verified as a run's; with --host, every client on the client's host, at consecutive addresses from its addr= on (the LAN only); writes OUT/%s, OUT/%s and OUT/%s", transport.MaxFanClients, results.ClientsFileName, report.ClientsReportFile, report.ClientsChartFile)}
}

// clientsOnly are run's flags that are not options of the plan and have
// no meaning in a sweep: given with --clients, they are refused rather
// than ignored (the plan refuses the others, nsbench.NewPlan).
var clientsOnly = []string{"instruments", "history"}

// clientsOptions are the options of `run --clients`: the sweep's defaults
// (nsbench.SweepDefaults) for the counts given, --quick's 2 s streams.
func clientsOptions(c *cli.Context) (nsbench.Options, error) {
	counts, err := fanout.ParseCounts(c.String("clients"))
	if err != nil {
		return nsbench.Options{}, err
	}
	for _, f := range clientsOnly {
		if c.IsSet(f) {
			return nsbench.Options{}, fmt.Errorf("--clients: --%s does not apply to the many-client sweep", f)
		}
	}
	o := nsbench.SweepDefaults(counts)
	if c.Bool("quick") {
		o.Duration = nsbench.Quick().Duration
	}
	return o, nil
}

// summarizeClients names a sweep's files.
func summarizeClients(c *cli.Context, res *nsbench.Result) {
	fmt.Fprintf(c.App.ErrWriter, "clients: %d rows in %s, report %s, page %s\n", len(res.Clients.Rows),
		filepath.Join(res.OutDir, results.ClientsFileName), filepath.Join(res.OutDir, report.ClientsReportFile), filepath.Join(res.OutDir, report.ClientsHTMLFile))
}

// clientsOutcome is the error that sets a complete sweep's exit code:
// rows that could not be measured whole (4).
func clientsOutcome(res *nsbench.Result) error {
	if res.Failures > 0 {
		return samplesFailedError{fmt.Sprintf("some clients could not be measured (see %s)", report.ClientsReportFile)}
	}
	return nil
}

// clientsTools are the programs a sweep starts.
var clientsTools = []string{"iperf3", "ssh", "sshd", "ssh-keygen"}
