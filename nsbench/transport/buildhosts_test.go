package transport

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// TestProgramVersionOnlyBesideOwnBinary: a host reads the Go version of
// a build's program copied beside its own binary, and "" for a program
// without Go build information; it reads nothing else: a path elsewhere,
// not clean, relative, not named as a copy, or a link is refused.
func TestProgramVersionOnlyBesideOwnBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(self)
	beside := func(name string) string {
		p := filepath.Join(dir, name)
		t.Cleanup(func() { os.Remove(p) })
		return p
	}
	goProg := beside(CopiedName("t", "prog")) // this test binary: a Go program
	if out, err := exec.Command("cp", self, goProg).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	script := beside(CopiedName("t", "script"))
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := beside(CopiedName("t", "link"))
	if err := os.Symlink(goProg, link); err != nil {
		t.Fatal(err)
	}
	unnamed := beside("prog")
	if err := os.Link(goProg, unnamed); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), CopiedName("t", "prog"))
	if err := os.WriteFile(elsewhere, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}

	bi, err := buildinfo.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{{goProg, versionOf(bi)}, {script, ""}} {
		got, err := ProgramVersionOn(t.Context(), role.Here, c.path)
		if err != nil || got != c.want {
			t.Errorf("%s: version %q, %v; want %q", c.path, got, err, c.want)
		}
	}
	for _, p := range []string{link, unnamed, elsewhere, "/etc/passwd", dir + "/../" + filepath.Base(dir) + "/" + CopiedName("t", "prog"),
		CopiedName("t", "prog")} {
		if v, err := ProgramVersionOn(t.Context(), role.Here, p); err == nil {
			t.Errorf("%s: read (version %q), want it refused", p, v)
		}
	}
}

// TestHostVersion: what a host states as a version is kept as data: a
// terminal escape is escaped, an overlong one refused.
func TestHostVersion(t *testing.T) {
	if v, err := hostVersion("p", "v1.2 \x1b]0;owned\x07"); err != nil || strings.ContainsAny(v, "\x1b\x07") {
		t.Errorf("version with escapes: %q, %v; want them escaped", v, err)
	}
	if v, err := hostVersion("p", strings.Repeat("v", maxVersionLen+1)); err == nil {
		t.Errorf("overlong version kept (%d bytes), want it refused", len(v))
	}
}

// TestProgramOptionsNameTheirRoles: every program option says which
// roles run it, so that across hosts a build's program reaches every host
// that runs it, and only those.
func TestProgramOptionsNameTheirRoles(t *testing.T) {
	known := []string{topology.Client, topology.Relay, topology.Server}
	for _, s := range Registered() {
		for _, o := range s.Options {
			if !o.File {
				continue
			}
			if len(o.Roles) == 0 {
				t.Errorf("%s --%s: no Roles", s.Name, o.Name)
			}
			for _, r := range o.Roles {
				if !slices.Contains(known, r) {
					t.Errorf("%s --%s: role %q is none of %v", s.Name, o.Name, r, known)
				}
			}
		}
	}
}

// TestProgramAt: a role's host runs its copy of a build's program, and
// any other program (or any program on one host) as it is named.
func TestProgramAt(t *testing.T) {
	tb := &Testbed{Copies: Copies{topology.Client: {"/here/wg": "/var/tmp/twnsb-000000-client/build-a-wireguard-go"}}}
	for _, c := range []struct{ role, path, want string }{
		{topology.Client, "/here/wg", "/var/tmp/twnsb-000000-client/build-a-wireguard-go"},
		{topology.Server, "/here/wg", "/here/wg"},
		{topology.Client, "openvpn", "openvpn"},
	} {
		if got := tb.ProgramAt(c.role, c.path); got != c.want {
			t.Errorf("ProgramAt(%s, %s) = %s, want %s", c.role, c.path, got, c.want)
		}
	}
	if got := (&Testbed{}).ProgramAt(topology.Client, "/here/wg"); got != "/here/wg" {
		t.Errorf("on one host: %s, want the path itself", got)
	}
}
