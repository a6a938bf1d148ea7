package nsbench

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/fanout"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// runSweep is Run for the many-client sweep (plan.Clients): fanout sweeps
// the transports over the counts, each transport and count on a testbed of
// its own built as every testbed is (bed), and writes the sweep's document
// after every row; the reports follow at the end.
func runSweep(ctx context.Context, plan *Plan, deps Deps, logf Logf) (*Result, error) {
	doc := &results.Clients{SchemaVersion: results.SchemaVersion, Env: sweepEnv(), Counts: plan.Clients, DurationSec: plan.Duration.Seconds()}
	doc.Env.Runs = plan.Runs
	for _, t := range deps.Transports {
		if b := buildOf(t); b != nil {
			if doc.Builds == nil {
				doc.Builds = map[string]results.Build{}
			}
			doc.Builds[t.Name()] = *b
		}
	}
	res := &Result{OutDir: plan.OutDir, Clients: doc}
	cfg := testbedConfig{OutDir: plan.OutDir, Network: plan.Network}
	up := func(ctx context.Context, s fanout.Shape) (fanout.Bed, error) {
		c := cfg
		c.Clients = s
		return upClients(ctx, c, logf)
	}
	// Builds side by side meet the host's drift alike (fanout.runOrder).
	fp := fanout.Plan{Counts: plan.Clients, Duration: plan.Duration, OutDir: plan.OutDir, Runs: plan.Runs, Alternate: plan.HasBuilds()}
	err := fanout.Run(ctx, fp, deps.Transports, doc, up, logf)
	doc.Complete = err == nil
	if errors.Is(err, context.Canceled) {
		doc.Incomplete, err = "interrupted", ErrInterrupted
	} else if err != nil {
		doc.Incomplete = err.Error()
	}
	if werr := results.WriteClients(filepath.Join(plan.OutDir, results.ClientsFileName), doc); werr != nil {
		return res, errors.Join(err, werr)
	}
	if _, werr := WriteClientsReports(plan.OutDir, doc); werr != nil {
		return res, errors.Join(err, werr)
	}
	for _, row := range doc.Rows {
		for _, r := range row.Sweeps() {
			if r.Error != "" || len(r.Failed) > 0 || (r.Timing != nil && len(r.Timing.Residue) > 0) {
				res.Failures++
			}
		}
	}
	return res, err
}

// sweepEnv is the host as the sweep's document states it.
func sweepEnv() results.Env {
	model, err := preflight.CPUModel()
	if err != nil {
		model = "unknown"
	}
	return results.Env{Generated: time.Now().UTC().Format(time.RFC3339), CPUModel: model, Cores: runtime.NumCPU(),
		Kernel: preflight.KernelRelease(), Topology: fanout.Spec(topology.Prefix+"000000", 1, false).Subnet.String()}
}
