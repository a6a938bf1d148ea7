package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// sshRoundTrip is a test-only instrument, registered through the same API
// an instrument outside the package uses: the wall time of `ssh … true`
// through the path, from the client role. It proves that a new instrument
// needs one file and one registration, and nothing in the orchestrator,
// results, compare or the report.
type sshRoundTrip struct{}

func init() { instrument.Register(sshRoundTrip{}) }

var _ instrument.Instrument = sshRoundTrip{}

func (sshRoundTrip) Name() string { return "ssh-round-trip" }
func (sshRoundTrip) Tool() string { return "ssh" }
func (sshRoundTrip) Needs() instrument.Needs {
	return instrument.Needs{Services: []transport.Service{transport.ServiceSSH}, Carries: transport.CarriesTCP}
}
func (sshRoundTrip) Metrics() []results.Metric {
	return []results.Metric{{Key: "value", Label: "ssh round trip (test only)", Unit: "s", Better: results.BetterLower}}
}
func (sshRoundTrip) Measure(ctx context.Context, job *instrument.Job) (instrument.Measurement, error) {
	start := time.Now()
	if err := instrument.Exchange(ctx, job); err != nil {
		return instrument.Measurement{}, err
	}
	wall := time.Since(start).Seconds()
	return instrument.Measurement{Value: wall, Unit: "s", WallSec: wall}, nil
}
func (sshRoundTrip) Budget(*instrument.Job) instrument.Budget {
	return instrument.Budget{Planned: time.Second, Basis: "one ssh exchange"}
}

// TestRegisteredInstrumentRunsEndToEnd: the test-only instrument is named
// like a built-in one, measures through a built-in transport and the
// test-only one, and its declared metric reaches the results' cells and
// the report.
func TestRegisteredInstrumentRunsEndToEnd(t *testing.T) {
	nstest.RequireRoot(t)
	doc, out := runAndRead(t, "--transports", "ssh,tcp-forward", "--wan", "off", "--quick", "--duration", "1s", "--warmup", "0", "--instruments", "tcp_rr,ssh-round-trip")
	n := map[string]int{}
	for _, s := range doc.Samples {
		if s.Instrument == "ssh-round-trip" {
			n[s.Transport]++
			if s.Value <= 0 || s.Value > 10 || s.Unit != "s" {
				t.Errorf("%s ssh-round-trip: %v %s", s.Transport, s.Value, s.Unit)
			}
		}
	}
	if n["ssh"] != 1 || n["tcp-forward"] != 1 {
		t.Errorf("ssh-round-trip samples per transport %v: want one each", n)
	}
	var cells int
	for _, c := range doc.Cells {
		if c.Instrument == "ssh-round-trip" {
			cells++
		}
	}
	if cells != 2 {
		t.Errorf("%d ssh-round-trip cells, want 2 (one per transport)", cells)
	}
	md, err := os.ReadFile(filepath.Join(out, "bench-report.md"))
	if err != nil || !strings.Contains(string(md), "ssh round trip (test only)") {
		t.Errorf("the report does not name the instrument's metric (%v)", err)
	}
}
