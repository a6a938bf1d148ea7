package ns_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// childEnv makes the test binary, started through the launcher, run one of
// children instead of the tests: "name prefix".
const childEnv = "NS_TEST_CHILD"

var children = map[string]func(prefix string) error{
	"fresh-run-dir": freshRunDir,
}

// runChild runs the child named by childEnv and exits, or returns at once.
func runChild() {
	spec := os.Getenv(childEnv)
	if spec == "" {
		return
	}
	name, prefix, _ := strings.Cut(spec, " ")
	f := children[name]
	if f == nil {
		fmt.Fprintf(os.Stderr, "no child %q\n", name)
		os.Exit(2)
	}
	if err := f(prefix); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// launch runs plan through the launcher, bounded by 20 s, with extra
// environment variables, and returns its standard output and error.
func launch(t *testing.T, plan ns.Plan, env ...string) (stdout, stderr string, pid int, err error) {
	t.Helper()
	argv, planEnv, err := ns.HelperCommand(plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a child that hangs fails the test
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), planEnv), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if cmd.Process != nil {
		pid = cmd.Process.Pid
	}
	return out.String(), errb.String(), pid, err
}

func TestHelperCommandRefusesRelativePrograms(t *testing.T) {
	for _, argv := range [][]string{nil, {""}, {"sh", "-c", "true"}} {
		if _, _, err := ns.HelperCommand(ns.Plan{NetNS: "/proc/self/ns/net", Argv: argv}); err == nil {
			t.Errorf("HelperCommand accepted argv %q", argv)
		}
	}
	argv, env, err := ns.HelperCommand(ns.Plan{NetNS: "/x", Argv: []string{"/bin/true"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(argv) != 2 || argv[1] != ns.HelperArg || !strings.HasPrefix(env, "TWNSBENCH_NSEXEC_PLAN=") {
		t.Errorf("HelperCommand = %q, %q", argv, env)
	}
}

// A launcher child is in the plan's namespace, keeps its PID through the
// exec, sees the plan's mounts (a bind over /etc/hosts, an overlay, a
// tmpfs on a directory it made) where the host does not, and does not
// inherit the plan.
func TestLauncher(t *testing.T) {
	nstest.RequireRoot(t)
	prefix := nstest.Prefix(t)
	n := create(t, prefix+"-l")
	dir := t.TempDir()
	marker := prefix + "-marker"
	write := func(path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hosts := filepath.Join(dir, "hosts")
	write(hosts, "192.0.2.7 "+marker+"\n")
	src, etc, tm := filepath.Join(dir, "src"), filepath.Join(dir, "etc"), filepath.Join(dir, "tm")
	write(filepath.Join(src, "passwd"), "child")
	write(filepath.Join(etc, "passwd"), "host")
	write(filepath.Join(etc, "keep"), "kept")
	const script = `set -e
echo "pid=$$"
echo "netns=$(readlink /proc/self/ns/net)"
echo "hosts=$(grep -c "$1" /etc/hosts)"
echo "passwd=$(cat "$2/passwd")"
echo "keep=$(cat "$2/keep")"
echo x > "$3/f"
echo "tmpfs=$(cat "$3/f")"
echo "plan=${TWNSBENCH_NSEXEC_PLAN-unset}"`
	stdout, stderr, pid, err := launch(t, ns.Plan{
		NetNS: n.Path(),
		Mounts: []ns.Mount{
			{Kind: "bind", Source: hosts, Target: "/etc/hosts"},
			{Kind: "mkdir", Target: tm},
			{Kind: "tmpfs", Target: tm},
			{Kind: "overlay", Source: src, Target: etc}, // applied first whatever its place
		},
		Argv: []string{"/bin/sh", "-c", script, "sh", marker, etc, tm},
	})
	if err != nil {
		t.Fatalf("launcher child: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	want := map[string]string{
		"pid":    strconv.Itoa(pid),
		"netns":  fmt.Sprintf("net:[%d]", nsfsInode(t, n.Path())),
		"hosts":  "1",
		"passwd": "child",
		"keep":   "kept",
		"tmpfs":  "x",
		"plan":   "unset",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("child's %s = %q, want %q", k, got[k], w)
		}
	}

	// The host sees none of it.
	if b, err := os.ReadFile("/etc/hosts"); err != nil || bytes.Contains(b, []byte(marker)) {
		t.Errorf("host's /etc/hosts holds the child's marker (or %v)", err)
	}
	if b, err := os.ReadFile(filepath.Join(etc, "passwd")); err != nil || string(b) != "host" {
		t.Errorf("host's %s/passwd = %q, %v; want the host's own", etc, b, err)
	}
	if _, err := os.Stat(filepath.Join(tm, "f")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the child's file on its tmpfs shows on the host: %v", err)
	}
	for _, p := range []string{etc, tm} {
		if opt, ok := mountPoints(t)[p]; ok {
			t.Errorf("%s is a mount point on the host (%s)", p, opt)
		}
	}
}

// A launcher that cannot enter the namespace says so and exits 127; the
// program never runs.
func TestLauncherFails(t *testing.T) {
	nstest.RequireRoot(t)
	missing := filepath.Join(ns.RunDir, nstest.Prefix(t)+"-none")
	stdout, stderr, _, err := launch(t, ns.Plan{NetNS: missing, Argv: []string{"/bin/echo", "ran"}})
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 127 {
		t.Errorf("launcher for a missing namespace: %v, want exit status 127", err)
	}
	if !strings.Contains(stderr, "open netns "+missing) || stdout != "" {
		t.Errorf("stdout %q, stderr %q; want no output and the reason", stdout, stderr)
	}
}

// On a host where /run/netns is a plain directory, Create makes it a
// shared mount point first. Otherwise the next `ip netns add` bind-mounts
// /run/netns over itself, the namespace's mount stays beneath, and Delete
// fails with "device or resource busy". The host's /run/netns is a mount
// point already; the child gets a fresh one on a private tmpfs.
func TestCreateOnFreshRunDir(t *testing.T) {
	nstest.RequireRoot(t)
	lookIP(t)
	prefix := nstest.Prefix(t)
	n := create(t, prefix+"-c")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, _, err := launch(t, ns.Plan{
		NetNS: n.Path(),
		Mounts: []ns.Mount{
			{Kind: "tmpfs", Target: "/run"}, // private to the child: all it makes dies with it
			{Kind: "mkdir", Target: ns.RunDir},
		},
		Argv: []string{self, "-test.run=^$"},
	}, childEnv+"=fresh-run-dir "+prefix)
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr)
	}
}

// freshRunDir runs in the child, on a /run of its own.
func freshRunDir(prefix string) error {
	// mountinfo still lists the host's /run/netns, hidden beneath the
	// child's /run: compare mount IDs instead.
	var run, dir unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, "/run", 0, unix.STATX_MNT_ID, &run); err != nil {
		return err
	}
	if err := unix.Statx(unix.AT_FDCWD, ns.RunDir, 0, unix.STATX_MNT_ID, &dir); err != nil {
		return err
	}
	if run.Mnt_id != dir.Mnt_id {
		return fmt.Errorf("setup: %s is a mount point already", ns.RunDir)
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return err
	}
	a, err := ns.Create(prefix + "-a")
	if err != nil {
		return err
	}
	defer a.Close()
	b := prefix + "-b"
	if out, err := ipNetns(ip, "add", b); err != nil {
		return fmt.Errorf("ip netns add %s: %w: %s", b, err, out)
	}
	defer ipNetns(ip, "del", b)
	var st, fst unix.Stat_t
	if err := unix.Stat(a.Path(), &st); err != nil {
		return fmt.Errorf("after ip netns add: %w", err)
	}
	if err := unix.Fstat(a.FD(), &fst); err != nil {
		return err
	}
	if st.Ino != fst.Ino {
		return fmt.Errorf("after ip netns add, %s is inode %d, the namespace %d: hidden", a.Path(), st.Ino, fst.Ino)
	}
	if err := ns.Delete(a.Name); err != nil {
		return fmt.Errorf("delete after ip netns add: %w", err)
	}
	return nil
}

func lookIP(t *testing.T) string {
	t.Helper()
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skipf("no ip (iproute2) here: %v", err)
	}
	return ip
}

// ipNetns runs `ip netns args…`, bounded by 10 s.
func ipNetns(ip string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, ip, append([]string{"netns"}, args...)...).CombinedOutput()
}
