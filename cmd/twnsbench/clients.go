package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/fanout"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// clientsFlag is run's --clients: the many-client sweep instead of the
// instruments' cells.
func clientsFlag() cli.Flag {
	return &cli.StringFlag{Name: "clients", Usage: fmt.Sprintf("many clients on one server instead of the instruments: comma-separated client counts (1 to %d), e.g. 1,2,4,8 — per count, that many client namespaces each with its own path through the transport (Pure SSH: an SSH session each; WireGuard: a peer each; OpenVPN TLS: a client each of one server; tw: a tw client each through one relay and one tw server) and one iperf3 stream each for --duration, all at once; --runs K runs the whole sweep K times, for compare to test its figures over (3 or more a side; 5 to detect a change among a few rows); writes OUT/%s, OUT/%s and OUT/%s", transport.MaxFanClients, results.ClientsFileName, report.ClientsReportFile, report.ClientsChartFile)}
}

// clientsDefault are the transports of a sweep without --transports.
var clientsDefault = []string{"ssh", "wireguard"}

// clientsExclusive are run's flags that have no meaning in a sweep: given
// with --clients, they are refused rather than ignored.
var clientsExclusive = []string{"wan", "instruments", "precision", "max-runs", "order", "size", "warmup", "keep", "build", "host", "hosts", "history", "nic"}

// runClients is `run --clients`: every input checked before anything is
// created, then one testbed per transport and count (fanout.Run), the
// results written after every row and the report at the end.
func runClients(c *cli.Context) error {
	counts, err := fanout.ParseCounts(c.String("clients"))
	if err != nil {
		return refuse(err)
	}
	for _, f := range clientsExclusive {
		if c.IsSet(f) {
			return refuse(fmt.Errorf("--clients: --%s does not apply to the many-client sweep", f))
		}
	}
	runs, err := clientsRuns(c)
	if err != nil {
		return refuse(err)
	}
	d := c.Duration("duration")
	if c.Bool("quick") && !c.IsSet("duration") {
		d = 2 * time.Second
	}
	if err := fanout.CheckDuration(d); err != nil {
		return refuse(err)
	}
	names := splitList(c.String("transports"))
	if len(names) == 0 {
		names = clientsDefault
	}
	ts, err := buildTransports(c, names)
	if err != nil {
		return refuse(err)
	}
	var not []string
	for _, t := range ts {
		if _, ok := t.(transport.Fanner); !ok {
			not = append(not, t.Name())
		}
		if cf, ok := t.(interface{ CanFan() error }); ok {
			if err := cf.CanFan(); err != nil {
				return refuse(fmt.Errorf("--clients: %w", err))
			}
		}
	}
	if len(not) > 0 {
		return refuse(fmt.Errorf("--clients: no many-client form yet for %s (there is for ssh, the WireGuard rows, openvpn-tls and tw)", strings.Join(not, ", ")))
	}
	if err := checkNamed(ts); err != nil {
		return refuse(err)
	}
	if c.String("congestion") != "cubic" {
		return refuse(fmt.Errorf("--clients: the sweep runs with cubic only (--congestion %s)", c.String("congestion")))
	}
	pre := preflight.Run(preflight.Options{Tools: []string{"iperf3", "ssh", "sshd", "ssh-keygen"}})
	if err := pre.Err(); err != nil {
		fmt.Fprint(c.App.ErrWriter, pre.String())
		return refuse(err)
	}
	out := c.String("out")
	if err := makeOutDir(out); err != nil {
		return refuse(err)
	}
	doc := &results.Clients{SchemaVersion: results.SchemaVersion, Env: clientsEnv(), Counts: counts, DurationSec: d.Seconds()}
	doc.Env.Runs = runs
	con := newConsole(c.App.ErrWriter)
	err = fanout.Run(c.Context, fanout.Plan{Counts: counts, Duration: d, OutDir: out, Runs: runs}, ts, doc, con.Logf)
	con.Close()
	doc.Complete = err == nil
	if errors.Is(err, context.Canceled) {
		doc.Incomplete, err = "interrupted", errInterrupted
	} else if err != nil {
		doc.Incomplete = err.Error()
	}
	if werr := results.WriteClients(filepath.Join(out, results.ClientsFileName), doc); werr != nil {
		return errors.Join(err, werr)
	}
	if _, werr := nsbench.WriteClientsReports(out, doc); werr != nil {
		return errors.Join(err, werr)
	}
	fmt.Fprintf(c.App.ErrWriter, "clients: %d rows in %s, report %s, page %s\n", len(doc.Rows),
		filepath.Join(out, results.ClientsFileName), filepath.Join(out, report.ClientsReportFile), filepath.Join(out, report.ClientsHTMLFile))
	if err != nil {
		return err
	}
	for _, row := range doc.Rows {
		for _, r := range row.Sweeps() {
			if r.Error != "" || len(r.Failed) > 0 || (r.Timing != nil && len(r.Timing.Residue) > 0) {
				return samplesFailedError{fmt.Sprintf("some clients could not be measured (see %s)", report.ClientsReportFile)}
			}
		}
	}
	return nil
}

// clientsRuns is --runs for the sweep: how many times it runs whole, 1 by
// default. Auto has no meaning here: its pilot sizes a cell's runs from
// their spread, and a sweep's figures are tested over whole sweeps.
func clientsRuns(c *cli.Context) (int, error) {
	if !c.IsSet("runs") {
		return 1, nil
	}
	v := strings.TrimSpace(c.String("runs"))
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxClientsRuns {
		return 0, fmt.Errorf("--clients: --runs %q: want how many times to run the sweep, 1 to %d", v, maxClientsRuns)
	}
	return n, nil
}

// maxClientsRuns bounds --runs for a sweep: every run builds a testbed per
// transport and count.
const maxClientsRuns = 100

// clientsEnv is the host as the sweep's document states it.
func clientsEnv() results.Env {
	model, err := preflight.CPUModel()
	if err != nil {
		model = "unknown"
	}
	return results.Env{Generated: time.Now().UTC().Format(time.RFC3339), CPUModel: model, Cores: runtime.NumCPU(),
		Kernel: preflight.KernelRelease(), Topology: fanout.Spec(topology.Prefix+"000000", 1, false).Subnet.String()}
}
