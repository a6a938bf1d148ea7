package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench"
)

func TestStatusLine(t *testing.T) {
	s := nsbench.Status{Transport: "ssh", Condition: "lan", Instrument: "iperf3-4", Run: 2, Runs: 3,
		Done: 5, Total: 12, Elapsed: 65 * time.Second, ETA: 130 * time.Second}
	got := statusLine(s, 10*time.Second)
	want := "▶ ssh / lan  iperf3-4  run 2/3  [5/12 samples]  elapsed 1m15s  ETA ~2m0s"
	if got != want {
		t.Errorf("statusLine = %q\nwant        %q", got, want)
	}
	if got := statusLine(nsbench.Status{Run: 1, Runs: 1, Total: 4}, 0); !strings.HasSuffix(got, "ETA ?") {
		t.Errorf("unknown ETA: %q", got)
	}
	s.FirstGuess = true
	if got := statusLine(s, 10*time.Second); !strings.HasSuffix(got, "ETA ~2m0s (first guess)") {
		t.Errorf("a guessed ETA must say so: %q", got)
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
