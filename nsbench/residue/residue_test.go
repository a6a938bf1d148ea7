package residue_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/residue"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

func TestMain(m *testing.M) { nstest.Main(m) }

func TestRunOf(t *testing.T) {
	for name, want := range map[string]string{
		"twnsb-3fa9c1":            "twnsb-3fa9c1",
		"twnsb-3fa9c1-client":     "twnsb-3fa9c1",
		"twnsb-3fa9c1.sock":       "twnsb-3fa9c1",
		"twnsb-3fa9c1x":           "",
		"twnsb-3fa9c":             "",
		"my-twnsb-3fa9c1":         "",
		"twnsb-3FA9C1":            "",
		"twnsb-3fa9c1-wg0.socket": "twnsb-3fa9c1",
		"twnsb-sleeptest":         "",
		"other-twnsb-3fa9c1":      "",
		"twnsbench":               "",
	} {
		if got := residue.RunOf(name); got != want {
			t.Errorf("RunOf(%q) = %q, want %q", name, got, want)
		}
	}
}

// The leak checker itself: each kind of object a run creates, made under a
// fake run prefix while its owner (this test, alive) claims it, is
// reported with its kind, and is no longer reported once removed.
func TestFindSeesEveryKind(t *testing.T) {
	nstest.RequireRoot(t)
	run := nstest.Prefix(t) // /tmp/<run>/harness.pid: this live process owns the run
	claim := filepath.Join("/tmp", run)
	expect(t, residue.Finder{}, run, residue.KindFile, claim)

	t.Run("netns and a process inside it", func(t *testing.T) {
		name := run + "-x"
		n, err := ns.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		n.Close()
		defer ns.Delete(name)
		seen := expect(t, residue.Finder{}, run, residue.KindNetns, name)
		// A process whose command line names nothing: only its network
		// namespace says whose it is.
		cmd := exec.Command("ip", "netns", "exec", name, "sleep", "60")
		stop := startProcess(t, cmd)
		waitFor(t, residue.Finder{}, run, residue.KindProcess, "netns "+name)
		stop()
		gone(t, residue.Finder{}, run, residue.KindProcess, "netns "+name)
		if err := ns.Delete(name); err != nil {
			t.Fatal(err)
		}
		gone(t, residue.Finder{}, run, residue.KindNetns, seen)
	})

	t.Run("link", func(t *testing.T) {
		// A run's link in the host namespace is a leak; the test makes
		// one in a namespace of another prefix that stands for the host,
		// and never touches the host's links.
		host, err := ns.Create(nstest.Prefix(t) + "-host")
		if err != nil {
			t.Fatal(err)
		}
		defer ns.Delete(host.Name)
		defer host.Close()
		h, err := host.Netlink()
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		f := residue.Finder{LinkNS: host}
		name := run + "-l" // 14 bytes: within IFNAMSIZ
		// A veth pair (this kernel has no dummy links); deleting one
		// end deletes both.
		if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: "peer0"}); err != nil {
			t.Fatal(err)
		}
		expect(t, f, run, residue.KindLink, name)
		// The zero Finder lists the caller's namespace: inside the stand-in
		// it sees the link; in the test's own namespace it does not.
		var inside []residue.Object
		if err := host.Do(func() error { inside = residue.Finder{}.Find(run); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(inside, func(o residue.Object) bool { return o.Kind == residue.KindLink && o.What == name }) {
			t.Errorf("the zero Finder inside %s: no link %s among %v", host.Name, name, inside)
		}
		gone(t, residue.Finder{}, run, residue.KindLink, name)
		l, err := h.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.LinkDel(l); err != nil {
			t.Fatal(err)
		}
		gone(t, f, run, residue.KindLink, name)
	})

	t.Run("cgroup and a process inside it", func(t *testing.T) {
		root, err := proc.Cgroup2Root()
		if err != nil {
			t.Skipf("no cgroup v2 here: %v", err)
		}
		cg, err := proc.NewCgroup(filepath.Join(root, run))
		if err != nil {
			t.Fatal(err)
		}
		defer cg.Remove(t.Context())
		expect(t, residue.Finder{}, run, residue.KindCgroup, cg.Path)
		cmd := exec.Command("sleep", "60")
		stop := startProcess(t, cmd)
		if err := os.WriteFile(filepath.Join(cg.Path, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
		expect(t, residue.Finder{}, run, residue.KindProcess, "cgroup /"+run)
		stop()
		gone(t, residue.Finder{}, run, residue.KindProcess, "cgroup /"+run)
		if err := cg.Remove(t.Context()); err != nil {
			t.Fatal(err)
		}
		gone(t, residue.Finder{}, run, residue.KindCgroup, cg.Path)
	})

	t.Run("process by its command line", func(t *testing.T) {
		cmd := exec.Command("sleep", "60")
		cmd.Args[0] = run + "-proc" // what `sshd -f /tmp/<run>/…` shows
		stop := startProcess(t, cmd)
		expect(t, residue.Finder{}, run, residue.KindProcess, run+"-proc 60")
		stop()
		gone(t, residue.Finder{}, run, residue.KindProcess, run+"-proc 60")
	})

	t.Run("tmpfs and a bind mount", func(t *testing.T) {
		for _, m := range []struct {
			kind, fstype string
			flags        uintptr
		}{{residue.KindTmpfs, "tmpfs", unix.MS_NOSUID | unix.MS_NODEV}, {residue.KindMount, "", unix.MS_BIND}} {
			dir := filepath.Join(claim, m.kind)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			src := m.fstype
			if m.flags&unix.MS_BIND != 0 {
				src = dir
			}
			if err := unix.Mount(src, dir, m.fstype, m.flags, ""); err != nil {
				t.Fatalf("mount %s: %v", dir, err)
			}
			expect(t, residue.Finder{}, run, m.kind, dir)
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
				t.Fatal(err)
			}
			gone(t, residue.Finder{}, run, m.kind, dir)
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("files", func(t *testing.T) {
		sub := t.TempDir() // stands for /run, with a wireguard/ inside
		if err := os.Mkdir(filepath.Join(sub, "wireguard"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			path string
			f    residue.Finder
		}{
			{"/tmp/" + run + "-file", residue.Finder{}},
			{"/run/" + run + "-file", residue.Finder{}},
			{filepath.Join(topology.EtcNetns, run+"-x"), residue.Finder{}},
			{filepath.Join(sub, "wireguard", run+"-wg0.sock"), residue.Finder{Roots: []string{sub}}},
		} {
			if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(c.path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			expect(t, c.f, run, residue.KindFile, c.path)
			if err := os.Remove(c.path); err != nil {
				t.Fatal(err)
			}
			gone(t, c.f, run, residue.KindFile, c.path)
		}
	})

	// Everything removed but the claim; then the claim too.
	if objs := residue.Find(run); len(objs) != 1 || objs[0].What != claim {
		t.Errorf("left: %v, want only the claim %s", objs, claim)
	}
	if err := os.RemoveAll(claim); err != nil {
		t.Fatal(err)
	}
	if objs := residue.Find(run); len(objs) != 0 {
		t.Errorf("left: %v", objs)
	}
}

// expect fails the test unless f finds an object of the kind whose
// description contains what, and returns the description.
func expect(t *testing.T, f residue.Finder, run, kind, what string) string {
	t.Helper()
	objs := f.Find(run)
	for _, o := range objs {
		if o.Kind == kind && o.Run == run && strings.Contains(o.What, what) {
			return o.What
		}
	}
	t.Fatalf("no %s %q among %v", kind, what, objs)
	return ""
}

func gone(t *testing.T, f residue.Finder, run, kind, what string) {
	t.Helper()
	for _, o := range f.Find(run) {
		if o.Kind == kind && strings.Contains(o.What, what) {
			t.Fatalf("%s still reported after removal", o)
		}
	}
}

// waitFor waits, up to 10 s, for f to report the object: a process
// started through `ip netns exec` is in the namespace only once ip has
// switched and exec'd.
func waitFor(t *testing.T, f residue.Finder, run, kind, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, o := range f.Find(run) {
			if o.Kind == kind && strings.Contains(o.What, what) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s %q within 10 s among %v", kind, what, f.Find(run))
		}
		time.Sleep(20 * time.Millisecond) // polling the process table, not synchronising on time
	}
}

// startProcess starts cmd and returns its stop: SIGKILL to its PID and the
// wait that reaps it (a zombie is not a leftover, but a reaped process is
// plainly gone). The stop also runs at cleanup.
func startProcess(t *testing.T, cmd *exec.Cmd) (stop func()) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	stop = func() {
		if !done {
			done = true
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
		}
	}
	t.Cleanup(stop)
	return stop
}

// The leak checker keeps to the run it is asked about: objects of another
// run are that run's, names that only look like a run's ("<run>x") and
// the host's own processes are nobody's.
func TestFindKeepsToItsRun(t *testing.T) {
	nstest.RequireRoot(t)
	run, other := nstest.Prefix(t), nstest.Prefix(t)
	near := run + "x" // RunOf(near) == "": not a run name
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	netns := func(name string) *ns.NS {
		n, err := ns.Create(name)
		must(err)
		t.Cleanup(func() { ns.Delete(name) })
		t.Cleanup(func() { n.Close() })
		return n
	}
	// The other run's objects, and near misses of ours, of every kind.
	host := netns(other + "-h") // stands for the host namespace: its links are listed
	netns(near)
	f := residue.Finder{LinkNS: host}
	h, err := host.Netlink()
	must(err)
	defer h.Close()
	for i, name := range []string{other + "-l", near} {
		must(h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: "peer" + strconv.Itoa(i)}))
	}
	if root, err := proc.Cgroup2Root(); err == nil {
		for _, name := range []string{other, near} {
			cg, err := proc.NewCgroup(filepath.Join(root, name))
			must(err)
			t.Cleanup(func() { cg.Remove(context.Background()) })
		}
	}
	must(os.Mkdir(filepath.Join("/tmp", near), 0o755))
	t.Cleanup(func() { os.RemoveAll(filepath.Join("/tmp", near)) })
	for _, owner := range []string{other, near} {
		tmpfs, bind := filepath.Join("/tmp", owner, "tmpfs"), filepath.Join("/tmp", owner, "bind")
		for _, dir := range []string{tmpfs, bind} {
			must(os.Mkdir(dir, 0o755))
			t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH); os.Remove(dir) })
		}
		must(unix.Mount("tmpfs", tmpfs, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, ""))
		must(unix.Mount(bind, bind, "", unix.MS_BIND, ""))
	}
	for _, name := range []string{other + "-proc", near} {
		cmd := exec.Command("sleep", "60")
		cmd.Args[0] = name
		startProcess(t, cmd)
	}
	plain := exec.Command("sleep", "60") // the host's own: no run anywhere
	startProcess(t, plain)
	inOther := exec.Command("ip", "netns", "exec", other+"-h", "sleep", "60")
	startProcess(t, inOther)
	waitFor(t, f, other, residue.KindProcess, "netns "+other+"-h")

	all := f.Find(topology.Prefix)
	for _, kind := range residue.Kinds {
		if kind == residue.KindCgroup {
			if _, err := proc.Cgroup2Root(); err != nil {
				continue
			}
		}
		expect(t, f, other, kind, other)
	}
	for _, o := range f.Find(run) {
		if o.Run != run || strings.Contains(o.What, other) || strings.Contains(o.What, near) {
			t.Errorf("Find(%s) reports %s (run %s)", run, o, o.Run)
		}
	}
	for _, o := range all {
		if strings.Contains(o.What, near) || o.Run == run && o.What != filepath.Join("/tmp", run) {
			t.Errorf("Find(%s) reports %s (run %s): a name that is no run's", topology.Prefix, o, o.Run)
		}
		if pid := "pid " + strconv.Itoa(plain.Process.Pid) + " "; strings.HasPrefix(o.What, pid) {
			t.Errorf("a process of no run reported: %s", o)
		}
	}
}
