package wg

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The daemon is upstream's wireguard-go program when one of the version
// built into twnsbench sits beside it; anything else runs the built-in
// copy and says why.
func TestChooseDaemon(t *testing.T) {
	const self = "/opt/twnsbench/bin/twnsbench"
	dir := t.TempDir()
	notGo := filepath.Join(dir, "not-go")
	if err := os.WriteFile(notGo, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	testBinary, err := os.Executable() // a Go program, but not wireguard-go
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, why string }{
		{filepath.Join(dir, "missing"), "`make build` builds it"},
		{notGo, "not-go"},
		{testBinary, "not golang.zx2c4.com/wireguard"},
	} {
		d := ChooseDaemon(self, c.path, "v1")
		if d.Upstream || !slices.Equal(d.Argv, []string{self, UserspaceCommand}) || !strings.Contains(d.Fallback, c.why) {
			t.Errorf("%s: %+v: want the built-in copy, saying %q", c.path, d, c.why)
		}
	}

	if testing.Short() {
		t.Skip("-short: not building wireguard-go")
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	upstream := filepath.Join(dir, DaemonProgram)
	if out, err := exec.Command(goTool, "build", "-o", upstream, goModule).CombinedOutput(); err != nil {
		t.Fatalf("build wireguard-go: %v\n%s", err, out)
	}
	// The version go.mod requires (a test binary carries no module list).
	v, err := exec.Command(goTool, "list", "-m", "-f", "{{.Version}}", goModule).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", goModule, err)
	}
	version := strings.TrimSpace(string(v))
	d := ChooseDaemon(self, upstream, version)
	if !d.Upstream || !slices.Equal(d.Argv, []string{upstream}) || !slices.Contains(d.Env, "WG_PROCESS_FOREGROUND=1") || d.Fallback != "" {
		t.Errorf("%+v: want upstream's program in the foreground", d)
	}
	if d := ChooseDaemon(self, upstream, "v0.0.0-other"); d.Upstream || !strings.Contains(d.Fallback, "not the v0.0.0-other built into twnsbench") {
		t.Errorf("another version: %+v: want the built-in copy, saying so", d)
	}
}
