package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench"
)

func TestStatusLine(t *testing.T) {
	s := nsbench.Status{Transport: "ssh", Condition: "lan", Instrument: "iperf3-4", Run: nsbench.RunOf{Run: 2, Runs: 3},
		Done: 5, Total: 12, Elapsed: 65 * time.Second, ETA: 130 * time.Second}
	got := statusLine(s, 10*time.Second)
	want := "▶ ssh / lan  iperf3-4  run 2/3  [5/12 samples]  elapsed 1m15s  ETA ~2m0s"
	if got != want {
		t.Errorf("statusLine = %q\nwant        %q", got, want)
	}
	if got := statusLine(nsbench.Status{Run: nsbench.RunOf{Run: 1, Runs: 1}, Total: 4}, 0); !strings.HasSuffix(got, "ETA ?") {
		t.Errorf("unknown ETA: %q", got)
	}
	s.FirstGuess = true
	if got := statusLine(s, 10*time.Second); !strings.HasSuffix(got, "ETA ~2m0s (first guess)") {
		t.Errorf("a guessed ETA must say so: %q", got)
	}
}

// TestStatusLineUnderRunsAuto: under --runs auto the line shows what is
// planned for the cell: during its pilot, the pilot and the most it can
// fix; after it, the runs it fixed (never "run 7/6").
func TestStatusLineUnderRunsAuto(t *testing.T) {
	s := nsbench.Status{Transport: "ssh", Condition: "lan", Instrument: "iperf3-1", Run: nsbench.RunOf{Run: 3, Runs: 6, Pilot: true, MaxRuns: 20}, Done: 2, Total: 12}
	if got := statusLine(s, 0); !strings.Contains(got, "  run 3/6 of the pilot, at most 20  [2/12 samples]") {
		t.Errorf("during the pilot: %q", got)
	}
	s.Run = nsbench.RunOf{Run: 7, Runs: 11, MaxRuns: 20}
	if got := statusLine(s, 0); !strings.Contains(got, "  run 7/11  [2/12 samples]") {
		t.Errorf("after the pilot: %q", got)
	}
}

func TestConsoleNotATerminalPrintsPlainLines(t *testing.T) {
	var b bytes.Buffer
	c := newConsole(&b)
	c.Status(nsbench.Status{Transport: "ssh"})
	c.Logf("hello %d", 42)
	c.Close()
	out := b.String()
	if strings.Contains(out, "\r") || strings.Contains(out, "▶") || !strings.HasSuffix(out, " hello 42\n") {
		t.Errorf("plain output expected, got %q", out)
	}
}
