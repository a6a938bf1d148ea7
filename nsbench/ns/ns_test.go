package ns_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/ns"
)

func TestMain(m *testing.M) {
	ns.MaybeRunHelper() // first: the launcher's own process sees childEnv too
	runChild()
	nstest.Main(m)
}

// create makes a namespace named name and deletes it at cleanup.
func create(t *testing.T, name string) *ns.NS {
	t.Helper()
	n, err := ns.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.Close()
		if err := ns.Delete(name); err != nil {
			t.Error(err)
		}
	})
	return n
}

// netInode is the inode of the network namespace that link (a
// /proc/…/ns/net symlink) points to.
func netInode(t testing.TB, link string) uint64 {
	t.Helper()
	ino, err := readNetInode(link)
	if err != nil {
		t.Fatal(err)
	}
	return ino
}

// threadInode reads the calling thread's namespace; callers hold their
// thread (ns.Do's f runs locked).
func threadInode() (uint64, error) { return readNetInode("/proc/thread-self/ns/net") }

func readNetInode(link string) (uint64, error) {
	target, err := os.Readlink(link)
	if err != nil {
		return 0, err
	}
	var ino uint64
	if _, err := fmt.Sscanf(target, "net:[%d]", &ino); err != nil {
		return 0, fmt.Errorf("%s -> %q: %w", link, target, err)
	}
	return ino, nil
}

// nsfsInode is the inode of the namespace file at path (a namespace's bind
// mount, or an open namespace fd), and fails unless it is one.
func nsfsInode(t testing.TB, path string) uint64 {
	t.Helper()
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		t.Fatalf("statfs %s: %v", path, err)
	}
	if fs.Type != unix.NSFS_MAGIC {
		t.Fatalf("%s is not a namespace file (filesystem type %#x)", path, fs.Type)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func fdInode(t testing.TB, fd int) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// hostInode is the test process's own namespace (the main thread's).
func hostInode(t testing.TB) uint64 {
	return netInode(t, fmt.Sprintf("/proc/%d/ns/net", os.Getpid()))
}

// threadsOutside lists the threads of this process that are not in the
// host's namespace: a Do that failed to restore its thread and let Go
// reuse it would show here.
func threadsOutside(t testing.TB) []string {
	t.Helper()
	host := hostInode(t)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		target, err := os.Readlink(filepath.Join("/proc/self/task", task.Name(), "ns", "net"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		if target != fmt.Sprintf("net:[%d]", host) {
			out = append(out, "thread "+task.Name()+" in "+target)
		}
	}
	return out
}

func mountPoints(t testing.TB) map[string]string {
	t.Helper()
	points, err := readMountPoints()
	if err != nil {
		t.Fatal(err)
	}
	return points
}

// readMountPoints maps each mount point of this mount namespace to its
// optional fields ("shared:1", "master:3"…).
func readMountPoints() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	points := map[string]string{} // mount point -> its optional fields
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 7 || sep < 6 {
			continue
		}
		points[f[4]] = strings.Join(f[6:sep], " ")
	}
	return points, nil
}

func TestCreateOpenDelete(t *testing.T) {
	nstest.RequireRoot(t)
	prefix := nstest.Prefix(t)
	name := prefix + "-a"
	n := create(t, name)
	if n.Path() != filepath.Join(ns.RunDir, name) {
		t.Errorf("Path() = %s", n.Path())
	}
	ino := nsfsInode(t, n.Path())
	if ino == hostInode(t) {
		t.Fatalf("%s is the host's namespace", n.Path())
	}
	if got := fdInode(t, n.FD()); got != ino {
		t.Errorf("FD() is namespace %d, its bind mount %d", got, ino)
	}
	if got, err := ns.List(prefix); err != nil || !slices.Equal(got, []string{name}) {
		t.Errorf("List(%s) = %v, %v; want [%s]", prefix, got, err, name)
	}
	if _, ok := mountPoints(t)[n.Path()]; !ok {
		t.Errorf("%s is not a mount point", n.Path())
	}
	// /run/netns is a shared mount point of its own (see shareRunDir).
	if opt, ok := mountPoints(t)[ns.RunDir]; !ok || !strings.Contains(opt, "shared:") {
		t.Errorf("%s after Create: mount point %v, propagation %q; want a shared mount point", ns.RunDir, ok, opt)
	}

	o, err := ns.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	if got := fdInode(t, o.FD()); got != ino {
		t.Errorf("Open(%s) gave namespace %d, want %d", name, got, ino)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil { // twice is harmless
		t.Errorf("second Close: %v", err)
	}

	// A second Create of the name fails and leaves the first alone.
	if dup, err := ns.Create(name); err == nil {
		dup.Close()
		t.Errorf("second Create(%s) succeeded", name)
	}
	if got := nsfsInode(t, n.Path()); got != ino {
		t.Errorf("after a second Create, %s is namespace %d, want %d", name, got, ino)
	}

	if err := ns.Delete(name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(n.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Delete: %v", n.Path(), err)
	}
	if _, ok := mountPoints(t)[n.Path()]; ok {
		t.Errorf("%s still mounted after Delete", n.Path())
	}
	if got, err := ns.List(prefix); err != nil || len(got) != 0 {
		t.Errorf("List(%s) after Delete = %v, %v", prefix, got, err)
	}
	if err := ns.Delete(name); err != nil {
		t.Errorf("Delete of a deleted namespace: %v, want nil", err)
	}
	if o, err := ns.Open(name); err == nil {
		o.Close()
		t.Errorf("Open(%s) after Delete succeeded", name)
	}
}

func TestDoRunsInsideAndRestores(t *testing.T) {
	nstest.RequireRoot(t)
	prefix := nstest.Prefix(t)
	n := create(t, prefix+"-a")
	want := nsfsInode(t, n.Path())
	host := hostInode(t)
	link := prefix + "-v" // 14 bytes: within IFNAMSIZ

	runtime.LockOSThread() // the caller's own thread, watched below
	defer runtime.UnlockOSThread()
	before, err := threadInode()
	if err != nil {
		t.Fatal(err)
	}

	var inside uint64
	err = n.Do(func() error {
		var err error
		if inside, err = threadInode(); err != nil {
			return err
		}
		if inside != want {
			return fmt.Errorf("f runs in namespace %d, want %d; no link made", inside, want)
		}
		// Guarded above: this never touches the host's links.
		return netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: link}, PeerName: prefix + "-p"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if inside == host {
		t.Fatal("f ran in the host's namespace")
	}
	after, err := threadInode()
	if err != nil {
		t.Fatal(err)
	}
	if before != host || after != host {
		t.Errorf("caller's thread: namespace %d before Do, %d after; host %d", before, after, host)
	}
	if _, err := netlink.LinkByName(link); !errors.As(err, new(netlink.LinkNotFoundError)) {
		t.Errorf("link %s made inside the namespace is visible in the host's: %v", link, err)
	}
	h, err := n.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.LinkByName(link); err != nil {
		t.Errorf("link %s not found through the namespace's netlink handle: %v", link, err)
	}
	if out := threadsOutside(t); len(out) > 0 {
		t.Errorf("after Do: %v", out)
	}

	// f's error comes back as it is, and the thread is restored all the same.
	sentinel := errors.New("sentinel")
	if err := n.Do(func() error { return sentinel }); err != sentinel {
		t.Errorf("Do returned %v, want f's error as it is", err)
	}
	if out := threadsOutside(t); len(out) > 0 {
		t.Errorf("after a failing Do: %v", out)
	}

	// A closed handle: Do fails before f runs.
	closed := create(t, prefix+"-c")
	closed.Close()
	ran := false
	if err := closed.Do(func() error { ran = true; return nil }); err == nil || ran {
		t.Errorf("Do on a closed namespace: error %v, f ran %v; want an error and f not run", err, ran)
	}
}

// Concurrent Do calls on two namespaces: each f sees its own namespace,
// and afterwards every thread of the process is back in the host's.
func TestDoConcurrent(t *testing.T) {
	nstest.RequireRoot(t)
	prefix := nstest.Prefix(t)
	nss := []*ns.NS{create(t, prefix+"-a"), create(t, prefix+"-b")}
	want := []uint64{nsfsInode(t, nss[0].Path()), nsfsInode(t, nss[1].Path())}
	host := hostInode(t)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				k := (g + i) % 2
				err := nss[k].Do(func() error {
					runtime.Gosched()
					got, err := threadInode()
					if err != nil {
						return err
					}
					if got != want[k] {
						return fmt.Errorf("Do in %s ran in namespace %d, want %d", nss[k].Name, got, want[k])
					}
					return nil
				})
				// Between Do calls this goroutine's thread is the host's.
				runtime.LockOSThread()
				got, ierr := threadInode()
				runtime.UnlockOSThread()
				if ierr == nil && got != host {
					ierr = fmt.Errorf("a goroutine between Do calls ran in namespace %d, want the host's %d", got, host)
				}
				if err = errors.Join(err, ierr); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if out := threadsOutside(t); len(out) > 0 {
		t.Errorf("after concurrent Do: %v", out)
	}
}

// A namespace made on the host stays visible and deletable after someone
// runs `ip netns add` (which makes /run/netns a mount point when it is not
// one).
func TestCreateThenIPNetnsAdd(t *testing.T) {
	nstest.RequireRoot(t)
	ip := lookIP(t)
	prefix := nstest.Prefix(t)
	a := create(t, prefix+"-a")
	ino := nsfsInode(t, a.Path())
	b := prefix + "-b"
	t.Cleanup(func() { ns.Delete(b) })
	if out, err := ipNetns(ip, "add", b); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", b, err, out)
	}
	if got := nsfsInode(t, a.Path()); got != ino {
		t.Errorf("after ip netns add, %s is namespace %d, want %d", a.Path(), got, ino)
	}
	if err := ns.Delete(a.Name); err != nil {
		t.Errorf("Delete after ip netns add: %v", err)
	}
	if out, err := ipNetns(ip, "del", b); err != nil {
		t.Errorf("ip netns del %s: %v: %s", b, err, out)
	}
}

// A namespace file with nothing mounted on it (its creator mounted it in a
// mount namespace of its own) is removed by Delete, so that clean can
// remove it.
func TestDeleteUnmountedFile(t *testing.T) {
	nstest.RequireRoot(t)
	name := nstest.Prefix(t) + "-bare"
	path := filepath.Join(ns.RunDir, name)
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	if err := ns.Delete(name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", path, err)
	}
}
