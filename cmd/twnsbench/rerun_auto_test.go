package main

import (
	"slices"
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

// TestRunArgsKeepDriftProbeOff: a run asked not to probe the host is run
// again without probes; a document with drift_probe absent (every earlier
// file) or true is run with them, the default.
func TestRunArgsKeepDriftProbeOff(t *testing.T) {
	off, on := false, true
	for _, tc := range []struct {
		probe *bool
		want  bool
	}{{&off, true}, {nil, false}, {&on, false}} {
		cfg := &results.RunConfig{Instruments: []string{"iperf3-1"}, CellRuns: results.CellRuns{Runs: "1"},
			Network: results.Network{Congestion: "cubic"}, Schedule: results.Schedule{Order: "interleaved", DriftProbe: tc.probe}}
		args := runArgs(cfg, []string{"ssh"}, "out")
		if got := slices.Contains(args, "--drift-probe=false"); got != tc.want || slices.Contains(args, "--drift-probe") {
			t.Errorf("drift_probe %v: args %q", tc.probe, args)
		}
	}
}

// TestRunArgsKeepPin: a pinned run is run again pinned the same way; an
// unpinned one gets no --pin.
func TestRunArgsKeepPin(t *testing.T) {
	cfg := &results.RunConfig{Instruments: []string{"tcp_rr"}, CellRuns: results.CellRuns{Runs: "3"}, Network: results.Network{Congestion: "cubic", Pin: "split"}, Schedule: results.Schedule{Order: "interleaved"}}
	if got := strings.Join(runArgs(cfg, []string{"ssh"}, "out"), " "); !strings.Contains(got, " --pin split") {
		t.Errorf("args %q: want --pin split", got)
	}
	cfg.Pin = ""
	if got := strings.Join(runArgs(cfg, []string{"ssh"}, "out"), " "); strings.Contains(got, "--pin") {
		t.Errorf("args %q: an unpinned run has no --pin", got)
	}
}
