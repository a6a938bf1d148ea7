package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// sampleOrder lists the timed samples as "transport/instrument/run".
func sampleOrder(doc *results.Document) []string {
	var out []string
	for _, s := range doc.Samples {
		if s.Instrument != "ready" {
			out = append(out, fmt.Sprintf("%s/%s/%d", s.Transport, s.Instrument, s.Run))
		}
	}
	return out
}

// An interleaved run goes run by run across the transports (each run
// starting one transport later), keeps the
// drift probes, and marks every cell measured beside another program's
// CPU hog; --order reference goes transport by transport.
func TestInterleavedRunMarksABusyHost(t *testing.T) {
	requireRoot(t)
	args := []string{"--transports", "ssh,wireguard", "--runs", "2", "--wan", "off", "--instruments", "iperf3-1,tcp_rr",
		"--duration", "1s", "--warmup", "0s", "--size", "1MiB"}

	// The hog is its own process, outside the run's cgroups and not the
	// harness (which runs in this test process): bounded by a deadline
	// and killed when the run is done.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hog := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
	if err := hog.Start(); err != nil {
		t.Fatal(err)
	}
	doc, out := runAndRead(t, args...)
	cancel()
	hog.Wait()

	if doc.Env.Order != "interleaved" {
		t.Errorf("env.order = %q, want interleaved", doc.Env.Order)
	}
	// Run 2 starts with the second transport: the order rotates.
	want := []string{"ssh/iperf3-1/1", "ssh/tcp_rr/1", "wireguard/iperf3-1/1", "wireguard/tcp_rr/1",
		"wireguard/iperf3-1/2", "wireguard/tcp_rr/2", "ssh/iperf3-1/2", "ssh/tcp_rr/2"}
	if got := sampleOrder(doc); !slices.Equal(got, want) {
		t.Errorf("sample order %v\nwant %v", got, want)
	}
	if len(doc.DriftProbes) != 2 || doc.DriftProbes[0].Gbps <= 0 || doc.DriftProbes[1].Gbps <= 0 {
		t.Errorf("drift probes: %+v", doc.DriftProbes)
	}
	for _, s := range doc.Samples {
		if s.Instrument == "ready" {
			continue
		}
		// One busy loop is a whole core of two-core host: even sharing
		// its core with the run it takes far more than 10 %.
		if s.Noise == nil || s.Noise.BackgroundPct < results.NoisyBackgroundPct || s.Noise.WindowSec <= 0 {
			t.Errorf("%s/%s/%d: noise %+v beside a CPU hog", s.Transport, s.Instrument, s.Run, s.Noise)
		}
	}
	for _, c := range doc.Cells {
		if c.Metric == "value" && c.Instrument != "ready" && !slices.Contains(c.Marks, results.MarkBackground) {
			t.Errorf("cell %s/%s not marked background: %+v", c.Transport, c.Instrument, c)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "bench-report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## Noise", "| Order | interleaved", " †"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report lacks %q", s)
		}
	}

	doc, _ = runAndRead(t, append(args, "--order", "reference", "--instruments", "iperf3-1")...)
	want = []string{"ssh/iperf3-1/1", "ssh/iperf3-1/2", "wireguard/iperf3-1/1", "wireguard/iperf3-1/2"}
	if got := sampleOrder(doc); doc.Env.Order != "reference" || !slices.Equal(got, want) {
		t.Errorf("--order reference: %q %v, want %v", doc.Env.Order, got, want)
	}
}
