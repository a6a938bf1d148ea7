package main

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestRunArgsKeepPrecisionMs: a --runs auto run is run again with the
// absolute precision its differences were held to, and a document written
// before --precision-ms gets the default (no flag).
func TestRunArgsKeepPrecisionMs(t *testing.T) {
	cfg := &results.RunConfig{Instruments: []string{"rrul"}, CellRuns: results.CellRuns{Runs: "auto", Precision: 0.05, PrecisionMs: 2.5, MaxRuns: 12},
		Network: results.Network{Congestion: "cubic"}, Schedule: results.Schedule{Order: "interleaved"}}
	got := strings.Join(runArgs(cfg, []string{"ssh"}, "out"), " ")
	if !strings.Contains(got, "--precision 5% --max-runs 12 --precision-ms 2.5") {
		t.Errorf("args %q: want --precision-ms 2.5 after --precision and --max-runs", got)
	}
	cfg.PrecisionMs = 0
	if got := strings.Join(runArgs(cfg, []string{"ssh"}, "out"), " "); strings.Contains(got, "--precision-ms") {
		t.Errorf("args %q: an older document has no --precision-ms to pass on", got)
	}
}
