package proc_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
)

func TestMain(m *testing.M) { nstest.Main(m) }

func TestParseCgroup2Mount(t *testing.T) {
	got, err := proc.ParseCgroup2MountForTest(strings.NewReader(
		"25 30 0:22 / /sys/fs/cgroup rw shared:9 - tmpfs tmpfs ro,mode=755\n" +
			"36 25 0:31 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw\n"))
	if err != nil || got != "/sys/fs/cgroup/unified" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := proc.ParseCgroup2MountForTest(strings.NewReader("1 2 0:1 / / rw - ext4 /dev/vda rw\n")); err == nil {
		t.Fatal("no cgroup2 line: want an error")
	}
}

func TestParseCPUStat(t *testing.T) {
	got, err := proc.ParseCPUStatUsage([]byte("usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n"))
	if err != nil || got != 123456 {
		t.Fatalf("got %d, %v", got, err)
	}
	if _, err := proc.ParseCPUStatUsage([]byte("user_usec 1\n")); err == nil {
		t.Fatal("missing usage_usec: want an error")
	}
}

// newEnv makes a namespace and a cgroup owned by the test.
func newEnv(t *testing.T) (*ns.NS, *proc.Cgroup) {
	nstest.RequireRoot(t)
	prefix := nstest.Prefix(t)
	n, err := ns.Create(prefix + "-proc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(); ns.Delete(n.Name) })
	root, err := proc.Cgroup2Root()
	if err != nil {
		t.Fatal(err)
	}
	cg, err := proc.NewCgroup(filepath.Join(root, prefix, "role"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := cg.Remove(ctx); err != nil {
			t.Error(err)
		}
		os.Remove(filepath.Dir(cg.Path))
	})
	return n, cg
}

func TestRunInNamespaceAndCgroup(t *testing.T) {
	n, cg := newEnv(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte("10.9.9.9 only-in-this-namespace\n"), 0o644)
	res, err := proc.Run(context.Background(), proc.Program{
		Name:   "test/sh",
		NetNS:  n.Path(),
		Cgroup: cg,
		Argv:   []string{"sh", "-c", "cat /etc/hosts; cat /proc/self/cgroup; readlink /proc/self/ns/net"},
		Mounts: []ns.Mount{{Kind: "bind", Source: hosts, Target: "/etc/hosts"}},
	})
	if err != nil {
		t.Fatalf("run: %v: %s", err, res.Stderr)
	}
	out := string(res.Stdout)
	if !strings.Contains(out, "only-in-this-namespace") {
		t.Errorf("hosts file not bound: %q", out)
	}
	if !strings.Contains(out, "0::/"+filepath.Base(filepath.Dir(cg.Path))+"/role") {
		t.Errorf("not in the role cgroup: %q", out)
	}
	self, _ := os.Readlink("/proc/self/ns/net")
	if strings.Contains(out, self) {
		t.Errorf("ran in the host network namespace (%s): %q", self, out)
	}
	// The bind mount stayed private to the child.
	host, _ := os.ReadFile("/etc/hosts")
	if strings.Contains(string(host), "only-in-this-namespace") {
		t.Fatal("the child's mount leaked into the host mount namespace")
	}
	usage, err := cg.UsageUsec()
	if err != nil || usage == 0 {
		t.Errorf("cgroup usage = %d, %v; want > 0", usage, err)
	}
}

func TestRunReportsToolFailure(t *testing.T) {
	n, cg := newEnv(t)
	res, err := proc.Run(context.Background(), proc.Program{
		Name: "test/false", NetNS: n.Path(), Cgroup: cg,
		Argv: []string{"sh", "-c", "echo boom >&2; exit 3"},
	})
	if err == nil {
		t.Fatal("want an error for exit 3")
	}
	if strings.TrimSpace(string(res.Stderr)) != "boom" {
		t.Errorf("stderr = %q, want boom", res.Stderr)
	}
}

// TestRunStampsStderrLines: each stderr line carries when it arrived,
// on Wall's clock, so a tool's own progress line splits its run.
func TestRunStampsStderrLines(t *testing.T) {
	n, cg := newEnv(t)
	// The program's own pause stages the timing; nothing waits on it.
	const pause = time.Second
	res, err := proc.Run(context.Background(), proc.Program{
		Name: "test/lines", NetNS: n.Path(), Cgroup: cg,
		Argv: []string{"sh", "-c", fmt.Sprintf("printf 'connected\\r\\n' >&2; sleep %g; echo done >&2; echo out", pause.Seconds())},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := res.StderrLines
	if len(l) != 2 || l[0].Text != "connected" || l[1].Text != "done" {
		t.Fatalf("lines = %+v", l)
	}
	// Certain: the second line cannot arrive before the pause ended, nor
	// after the exit. The first is stamped on its own arrival, not with
	// the second: only a reader that waited half the pause to wake on
	// a ready pipe would stamp it later.
	if l[0].At <= 0 || l[1].At < pause || l[1].At > res.Wall || l[1].At-l[0].At < pause/2 {
		t.Errorf("stamps %v, %v within wall %v: want 0 < first ≤ second − %v, %v ≤ second ≤ wall", l[0].At, l[1].At, res.Wall, pause/2, pause)
	}
}

func TestLineStampsJoinPartialWrites(t *testing.T) {
	start := time.Now()
	got := proc.StampLines(start, "debug1: Send", "ing command: cat\r\nsecond\nthi", "rd\n", "unfinished")
	want := []string{"debug1: Sending command: cat", "second", "third"}
	if len(got) != len(want) {
		t.Fatalf("lines = %+v, want %q", got, want)
	}
	for i := range want {
		if got[i].Text != want[i] || got[i].At < 0 || got[i].At > time.Since(start) {
			t.Errorf("line %d = %+v, want %q stamped since start", i, got[i], want[i])
		}
	}
}

func TestStartWaitStop(t *testing.T) {
	n, cg := newEnv(t)
	log := filepath.Join(t.TempDir(), "nc.log")
	p, err := proc.Start(proc.Program{
		Name: "test/listener", NetNS: n.Path(), Cgroup: cg, Log: log,
		// iperf3 is one of the harness's real servers.
		Argv: []string{"iperf3", "-s", "-p", "5299", "-B", "127.0.0.1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lo, _ := n.Netlink()
	l, _ := lo.LinkByName("lo")
	lo.LinkSetUp(l)
	lo.Close()
	if err := proc.WaitTCP(ctx, n, "127.0.0.1:5299", p); err != nil {
		t.Fatal(err)
	}
	pids, err := cg.PIDs()
	if err != nil || len(pids) != 1 || pids[0] != p.PID() {
		t.Errorf("cgroup members = %v, want [%d] (the program itself, not a wrapper)", pids, p.PID())
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned before the process was reaped")
	}
	if err := p.Stop(time.Second); err != nil {
		t.Fatalf("second stop: %v", err)
	}
}

func TestWaitTCPGivesUpWhenProcessExits(t *testing.T) {
	n, cg := newEnv(t)
	p, err := proc.Start(proc.Program{Name: "test/exits", NetNS: n.Path(), Cgroup: cg, Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = proc.WaitTCP(ctx, n, "127.0.0.1:1", p)
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("want an 'exited' error, got %v", err)
	}
}

// TestOverlaySurvivesAHostRename: files laid over a directory stay the
// child's even when the host replaces one of them by rename (what adduser
// does to /etc/passwd) after the child started; the directory's other
// files show through. A file bind mount would lose that race.
func TestOverlaySurvivesAHostRename(t *testing.T) {
	n, cg := newEnv(t)
	tmp := t.TempDir()
	target, ours := filepath.Join(tmp, "etc"), filepath.Join(tmp, "ours")
	ready, fifo := filepath.Join(tmp, "ready"), filepath.Join(tmp, "go")
	for _, d := range []string{target, ours} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(target, "passwd"), []byte("host-before\n"), 0o644)
	os.WriteFile(filepath.Join(target, "motd"), []byte("host-motd\n"), 0o644)
	os.WriteFile(filepath.Join(ours, "passwd"), []byte("ours\n"), 0o644)
	for _, f := range []string{ready, fifo} {
		if err := unix.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(tmp, "child.log")
	p, err := proc.Start(proc.Program{
		Name: "test/overlay", NetNS: n.Path(), Cgroup: cg, Log: log,
		// The child says it runs (its mounts are in place), then reads
		// the files once the host has renamed.
		Argv:   []string{"sh", "-c", "echo > " + ready + "; read x < " + fifo + "; cat " + target + "/passwd " + target + "/motd"},
		Mounts: []ns.Mount{{Kind: "overlay", Source: ours, Target: target}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	if _, err := os.ReadFile(ready); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tmp, "passwd.new"), []byte("host-after\n"), 0o644)
	if err := os.Rename(filepath.Join(tmp, "passwd.new"), filepath.Join(target, "passwd")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	out, _ := os.ReadFile(log)
	if got := string(out); !strings.Contains(got, "ours\nhost-motd\n") {
		t.Errorf("child saw %q; want its own passwd and the host's motd", got)
	}
}

// TestProgramsGetTheKeptEnvironment: a program and a daemon in a role see
// PATH, the locale, HOME from passwd and their spec's variables, and none
// of the rest of the harness's environment (an ssh-agent's socket, a
// secret, an operator's HOME, the launcher's plan).
func TestProgramsGetTheKeptEnvironment(t *testing.T) {
	n, cg := newEnv(t)
	t.Setenv("SSH_AUTH_SOCK", "/tmp/ssh-XXXX/agent.1")
	t.Setenv("FOO_SECRET", "hunter2")
	t.Setenv("LD_PRELOAD", "/tmp/evil.so")
	t.Setenv("HOME", "/home/operator")
	t.Setenv("LC_TIME", "C.UTF-8")
	want := map[string]string{"PATH": os.Getenv("PATH"), "LC_TIME": "C.UTF-8", "HOME": "/root", "SPEC_VAR": "yes"}
	check := func(what string, out []byte) {
		t.Helper()
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			k, v, _ := strings.Cut(line, "=")
			got[k] = v
		}
		for _, k := range []string{"SSH_AUTH_SOCK", "FOO_SECRET", "LD_PRELOAD", "TWNSBENCH_NSEXEC_PLAN"} {
			if v, ok := got[k]; ok {
				t.Errorf("%s: %s=%s reached the program", what, k, v)
			}
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s=%q, want %q", what, k, got[k], v)
			}
		}
	}
	spec := proc.Program{Name: "test/env", NetNS: n.Path(), Cgroup: cg, Argv: []string{"env"}, Env: []string{"SPEC_VAR=yes"}}
	res, err := proc.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("run: %v: %s", err, res.Stderr)
	}
	check("run", res.Stdout)

	spec.Log = filepath.Join(t.TempDir(), "env.log")
	p, err := proc.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		p.Stop(time.Second)
		t.Fatal("env still running after 10 s")
	}
	if p.Err() != nil {
		t.Fatal(p.Err())
	}
	out, err := os.ReadFile(spec.Log)
	if err != nil {
		t.Fatal(err)
	}
	check("daemon", out)
}

// TestRootsPath: a program path from the environment is taken only when
// it and every directory above it are root's and writable by no one
// else; a sticky directory (/tmp) may be writable by all.
func TestRootsPath(t *testing.T) {
	nstest.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "tool")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(prog, link); err != nil {
		t.Fatal(err)
	}
	if err := proc.RootsPath("TOOL", prog); err != nil {
		t.Errorf("root's program: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func() error
		path   string
		want   string
	}{
		{"file owned by another user", func() error { return os.Chown(prog, 65534, 65534) }, prog, prog + " is owned by uid 65534"},
		{"through a symlink", func() error { return os.Chown(prog, 65534, 65534) }, link, prog + " is owned by uid 65534"},
		{"directory owned by another user", func() error { return os.Chown(dir, 65534, 65534) }, prog, dir + " is owned by uid 65534"},
		{"group-writable file", func() error { return os.Chmod(prog, 0o775) }, prog, prog + " is writable by group or others (mode 775)"},
		{"world-writable directory", func() error { return os.Chmod(dir, 0o777) }, prog, dir + " is writable by group or others (mode 777)"},
	} {
		if err := tc.change(); err != nil {
			t.Fatal(err)
		}
		err := proc.RootsPath("TOOL", tc.path)
		if want := "$TOOL=" + tc.path + " refused: " + tc.want; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", tc.name, err, want)
		}
		os.Chown(prog, 0, 0)
		os.Chown(dir, 0, 0)
		os.Chmod(prog, 0o755)
		os.Chmod(dir, 0o755)
	}
	if err := proc.RootsPath("TOOL", filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "$TOOL=") {
		t.Errorf("missing program: %v", err)
	}
}

// A pinned program runs on its CPUs alone, and so do the threads and
// children it makes: the launcher sets the affinity before exec.
func TestRunPinned(t *testing.T) {
	n, cg := newEnv(t)
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	last := -1
	for i := 0; i < len(allowed)*64; i++ {
		if allowed.IsSet(i) {
			last = i
		}
	}
	// A child of the program's (grep, forked by sh), then every thread of
	// the program itself (sh).
	res, err := proc.Run(context.Background(), proc.Program{
		Name: "test/pinned", NetNS: n.Path(), Cgroup: cg, CPUs: []int{last},
		Argv: []string{"sh", "-c", "grep Cpus_allowed_list /proc/self/status; grep -h Cpus_allowed_list /proc/$$/task/*/status"},
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Stderr)
	}
	want := fmt.Sprintf("Cpus_allowed_list:\t%d", last)
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	if len(lines) < 2 {
		t.Fatalf("got %q, want the child's and the grandchild's lists", res.Stdout)
	}
	for _, l := range lines {
		if l != want {
			t.Errorf("got %q, want %q (every line)", l, want)
		}
	}
	// Unpinned, the child keeps the harness's own affinity.
	res, err = proc.Run(context.Background(), proc.Program{
		Name: "test/unpinned", NetNS: n.Path(), Cgroup: cg,
		Argv: []string{"grep", "Cpus_allowed_list", "/proc/self/status"},
	})
	if err != nil {
		t.Fatal(err)
	}
	own, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(own), "\n") {
		if strings.HasPrefix(l, "Cpus_allowed_list:") && strings.TrimSpace(string(res.Stdout)) != l {
			t.Errorf("unpinned: got %q, want the harness's %q", res.Stdout, l)
		}
	}
	// A CPU the host lacks fails the start, naming it.
	_, err = proc.Run(context.Background(), proc.Program{
		Name: "test/nowhere", NetNS: n.Path(), Cgroup: cg, CPUs: []int{len(allowed)*64 - 1},
		Argv: []string{"true"},
	})
	if err == nil {
		t.Error("pinned to a CPU the host lacks: want an error")
	}
}
