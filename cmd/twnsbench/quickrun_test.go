package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The quick run of Pure SSH and WireGuard on the LAN (without warm-ups), made once and
// read by every test that asks what such a run records (TestQuickSSHRun,
// TestQuickWireGuardRun, TestReportReproducesRun): one run instead of three
// takes about 75 s off the suite. The tests only read its directory.
var quick struct {
	once sync.Once
	mode string // --wireguard
	dir  string
	doc  *results.Document
	err  error
}

// quickRun returns the shared run's document, its output directory and the
// --wireguard mode it ran with (TWNSBENCH_TEST_WIREGUARD, default auto).
func quickRun(t *testing.T) (*results.Document, string, string) {
	t.Helper()
	nstest.RequireRoot(t)
	quick.once.Do(func() {
		quick.mode = os.Getenv(wireguardModeEnv)
		if quick.mode == "" {
			quick.mode = "auto"
		}
		if quick.dir, quick.err = os.MkdirTemp("", "twnsbench-quick-run-"); quick.err != nil {
			return
		}
		// No warm-ups: no test reads them, and 16 of them (with a warm-up
		// copy per transport) took about 20 s; TestWANQuickRunUserspace
		// runs --quick's warm-ups.
		// In the kernel-path VM WireGuard alone: its netem check runs
		// Pure SSH there, and TestQuickSSHRun reads the shared run here.
		transports := "ssh,wireguard"
		if os.Getenv(emulatedEnv) != "" {
			transports = "wireguard"
		}
		code, stdout, stderr := runInProcess("run", "--transports", transports, "--wireguard", quick.mode,
			"--wan", "off", "--quick", "--warmup", "0", "--out", quick.dir)
		if code != exitOK {
			quick.err = fmt.Errorf("the shared quick run: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			return
		}
		quick.doc, quick.err = results.Read(filepath.Join(quick.dir, results.FileName))
	})
	if quick.err != nil {
		t.Fatal(quick.err)
	}
	return quick.doc, quick.dir, quick.mode
}

// removeQuickRun deletes the shared run's directory (TestMain, after the
// tests).
func removeQuickRun() {
	if quick.dir != "" {
		os.RemoveAll(quick.dir)
	}
}
