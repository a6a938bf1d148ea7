package main

import (
	"runtime"
	"strings"
	"testing"
)

// TestVersionFlag: --version prints the version, the commit line and the
// Go toolchain, and exits 0.
func TestVersionFlag(t *testing.T) {
	code, stdout, stderr := runInProcess("--version")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "twnsbench ") || !strings.HasPrefix(lines[1], "commit ") || lines[2] != runtime.Version() {
		t.Errorf("--version printed %q: want 'twnsbench V', 'commit …', %q", stdout, runtime.Version())
	}
}
