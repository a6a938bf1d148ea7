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
	cfg := &results.RunConfig{Instruments: []string{"rrul"}, Runs: "auto", Precision: 0.05, PrecisionMs: 2.5, MaxRuns: 12,
		Network: results.Network{Congestion: "cubic"}, Order: "interleaved"}
	got := strings.Join(runArgs(cfg, []string{"ssh"}, "out"), " ")
	if !strings.Contains(got, "--precision 5% --max-runs 12 --precision-ms 2.5") {
		t.Errorf("args %q: want --precision-ms 2.5 after --precision and --max-runs", got)
	}
	cfg.PrecisionMs = 0
	if got := strings.Join(runArgs(cfg, []string{"ssh"}, "out"), " "); strings.Contains(got, "--precision-ms") {
		t.Errorf("args %q: an older document has no --precision-ms to pass on", got)
	}
}

// TestRunArgsKeepPin: a pinned run is run again pinned the same way; an
// unpinned one gets no --pin.
func TestRunArgsKeepPin(t *testing.T) {
	cfg := &results.RunConfig{Instruments: []string{"tcp_rr"}, Runs: "3", Network: results.Network{Congestion: "cubic", Pin: "split"}, Order: "interleaved"}
	if got := strings.Join(runArgs(cfg, []string{"ssh"}, "out"), " "); !strings.Contains(got, " --pin split") {
		t.Errorf("args %q: want --pin split", got)
	}
	cfg.Pin = ""
	if got := strings.Join(runArgs(cfg, []string{"ssh"}, "out"), " "); strings.Contains(got, "--pin") {
		t.Errorf("args %q: an unpinned run has no --pin", got)
	}
}
