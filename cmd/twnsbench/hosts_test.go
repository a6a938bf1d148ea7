package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
)

func TestHostFlagsRefusedBeforeAnything(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"doctor", "--host", "router=root@10.0.0.2"}, `unknown role "router"`},
		{[]string{"doctor", "--host", "client=root@10.0.0.2", "--host", "client=root@10.0.0.3"}, "role client is already on a host"},
		{[]string{"doctor", "--host", "client=root@10.0.0.2:99999"}, `bad port "99999"`},
		{[]string{"clean", "--hosts", filepath.Join(dir, "none")}, "--hosts: open"},
		{[]string{"doctor", "--host", "client=root@10.0.0.2", "--identity", filepath.Join(dir, "none")}, "--identity: open"},
		{[]string{"doctor", "--known-hosts", filepath.Join(dir, "kh")}, "--known-hosts: names no host"},
	} {
		code, _, stderr := runInProcess(tc.args...)
		if code != exitRefused || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

// inOrch runs `twnsbench args...` as a process in the lab's orchestrator
// namespace, so that it reaches the machines only over the lab's cable.
func inOrch(t *testing.T, l *remotetest.Lab, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := proc.Run(ctx, proc.Program{Name: "orchestrator", NetNS: l.Orch.Path(),
		Argv: append([]string{os.Args[0]}, withoutDriftProbe(args)...),
		Env:  []string{asCommandEnv + "=1", "SSH_AUTH_SOCK="}})
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, string(res.Stdout), string(res.Stderr)
}

// copies lists this binary's copies under remote.CopyRoot.
func copies(t *testing.T) []string {
	m, err := filepath.Glob(filepath.Join(remote.CopyRoot, "twnsb-*"))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	own, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	// Another package's tests running at the same time (go test ./...)
	// put their labs and copies of their own binary there too: only
	// copies of this test binary count.
	var out []string
	for _, dir := range m {
		b, err := os.ReadFile(filepath.Join(dir, "twnsbench"))
		if err == nil && bytes.Equal(b, own) {
			out = append(out, dir)
		}
	}
	return out
}

// TestDoctorHosts: doctor --host on two emulated machines reports each
// host's kernel, interface and tools; a login without sudo and a missing
// interface are refused (exit 2) naming the host; no copy is left.
func TestDoctorHosts(t *testing.T) {
	nstest.RequireRoot(t)
	l := remotetest.New(t, 2)
	before := copies(t)
	m0, m1 := l.Machines[0].Addr.String(), l.Machines[1].Addr.String()
	keys := []string{"--identity", l.Identity, "--known-hosts", l.KnownHosts, "--connect-timeout", "3s"}

	code, stdout, stderr := inOrch(t, l, append([]string{"doctor", "--host", "client=root@" + m0, "--host", "server=root@" + m1 + ",iface=eth0"}, keys...)...)
	if code != exitOK {
		t.Fatalf("doctor --host: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("doctor --host:\n%s", stdout)
	var u unix.Utsname
	unix.Uname(&u)
	kernel := unix.ByteSliceToString(u.Release[:])
	for role, addr := range map[string]string{"client": m0, "server": m1} {
		name := role + " root@" + addr + ":22: "
		for _, want := range []string{
			name + "kernel " + kernel + ", interface eth0 " + addr + "/24",
			name + "ok        root",
			name + "ok        iperf3",
			name + "ok        transport ssh",
		} {
			if !strings.Contains(stdout, want) {
				t.Errorf("doctor --host output lacks %q:\n%s", want, stdout)
			}
		}
	}

	for _, tc := range []struct {
		host string
		want string
	}{
		{"client=" + remotetest.BenchUser + "@" + m0, "client: bench@" + m0 + ":22: sudo needs a password; add a NOPASSWD rule (see docs/hosts.md)"},
		{"server=root@" + m1 + ",iface=eth7", "server: root@" + m1 + `:22: no interface "eth7"`},
	} {
		code, stdout, stderr := inOrch(t, l, append([]string{"doctor", "--host", tc.host}, keys...)...)
		t.Logf("doctor --host %s: exit %d: %s", tc.host, code, stderr)
		if code != exitRefused || !strings.Contains(stderr, tc.want) {
			t.Errorf("doctor --host %s: exit %d, stderr %q; want exit 2 and %q (stdout %q)", tc.host, code, stderr, tc.want, stdout)
		}
	}

	// A copy a killed command left an hour ago, and one written just now
	// (another command's, about to run): clean --host takes the first only.
	stale, fresh := filepath.Join(remote.CopyRoot, l.Prefix+"-client"), filepath.Join(remote.CopyRoot, l.Prefix+"-server")
	for _, d := range []string{stale, fresh} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		os.WriteFile(filepath.Join(d, "twnsbench"), []byte("#!/bin/sh\n"), 0o700)
	}
	hourAgo := time.Now().Add(-time.Hour)
	os.Chtimes(stale, hourAgo, hourAgo)
	before = append(before, fresh)
	checkForeign := plantForeignCopies(t, l, l.Machines[1])

	code, stdout, stderr = inOrch(t, l, append([]string{"clean", "--host", "relay=root@" + m1}, keys...)...)
	t.Logf("clean --host:\n%s", stdout)
	if code != exitOK || !strings.Contains(stdout, "relay root@"+m1+":22: removed "+stale+" (a copy of twnsbench)") {
		t.Errorf("clean --host: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("clean --host removed a fresh copy: %v", err)
	}
	checkForeign()

	if left := copies(t); len(left) > len(before) {
		t.Errorf("copies left on the machines: %v (before: %v)", slices.DeleteFunc(left, func(s string) bool { return slices.Contains(before, s) }), before)
	}
}
