// Package ns is the only place that switches a thread's network namespace.
//
// Everything else works through handles bound to a namespace (netlink
// handles from Netlink) or through children started by the namespace
// launcher (exec.go), which enters the namespace in a fresh process before it
// execs the real program.
package ns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// RunDir is where named network namespaces are bind-mounted (as iproute2 does).
const RunDir = "/run/netns"

// NS is a named network namespace.
type NS struct {
	Name   string
	handle netns.NsHandle
}

// Path is the namespace's bind mount, usable with setns and `ip netns exec`.
func (n *NS) Path() string { return filepath.Join(RunDir, n.Name) }

// FD is the open namespace file descriptor.
func (n *NS) FD() int { return int(n.handle) }

// Create makes a new named namespace without moving the caller into it.
func Create(name string) (*NS, error) {
	if err := shareRunDir(); err != nil {
		return nil, fmt.Errorf("create netns %s: %w", name, err)
	}
	var h netns.NsHandle
	err := inFreshThread(func() error {
		var err error
		h, err = netns.NewNamed(name) // switches this thread; the caller restores it
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create netns %s: %w", name, err)
	}
	return &NS{Name: name, handle: h}, nil
}

// shareRunDir makes RunDir a shared mount point of its own before any
// namespace is mounted in it, as `ip netns add` does on its first use.
// Without it, the first `ip netns add` anyone runs on the host while a run
// is live bind-mounts RunDir over itself and hides the run's namespaces:
// their teardown then fails with "device or resource busy" (seen here).
func shareRunDir() error {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return err
	}
	err := unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) { // not a mount point yet
		if err = unix.Mount(RunDir, RunDir, "none", unix.MS_BIND|unix.MS_REC, ""); err == nil {
			err = unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		}
	}
	if err != nil {
		return fmt.Errorf("make %s a shared mount point: %w", RunDir, err)
	}
	return nil
}

// Open opens an existing named namespace.
func Open(name string) (*NS, error) {
	h, err := netns.GetFromName(name)
	if err != nil {
		return nil, fmt.Errorf("open netns %s: %w", name, err)
	}
	return &NS{Name: name, handle: h}, nil
}

// OpenInitial opens the network namespace of PID 1: the machine's
// initial one, which a process in another namespace of the same kernel
// (an emulated machine, a container) can still enter as root.
func OpenInitial() (*NS, error) {
	h, err := netns.GetFromPath("/proc/1/ns/net")
	if err != nil {
		return nil, fmt.Errorf("open the initial netns: %w", err)
	}
	return &NS{Name: "initial", handle: h}, nil
}

// Close releases the file descriptor; the namespace itself stays.
func (n *NS) Close() error {
	if n == nil || !n.handle.IsOpen() {
		return nil
	}
	err := n.handle.Close()
	n.handle = netns.None()
	return err
}

// Delete removes a named namespace's bind mount. The namespace dies when its
// last process and file descriptor are gone: kill its processes first.
//
// A file with no namespace mounted on it (its creator mounted it in a
// mount namespace of its own, or died between creating and mounting) is
// removed as it is: unmounting it fails with EINVAL.
func Delete(name string) error {
	err := netns.DeleteNamed(name)
	if errors.Is(err, unix.EINVAL) {
		err = os.Remove(filepath.Join(RunDir, name))
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete netns %s: %w", name, err)
	}
	return nil
}

// List returns the names of the named namespaces that start with prefix.
func List(prefix string) ([]string, error) {
	entries, err := os.ReadDir(RunDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list netns: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Netlink returns a netlink handle whose requests act inside n, with a
// socket for each of families (unix.NETLINK_ROUTE, …; none: every family
// the netlink package supports).
func (n *NS) Netlink(families ...int) (*netlink.Handle, error) {
	h, err := netlink.NewHandleAt(n.handle, families...)
	if err != nil {
		return nil, fmt.Errorf("netlink handle in %s: %w", n.Name, err)
	}
	return h, nil
}

// Do runs f on a thread that is inside n, then returns the thread to the
// caller's namespace. f must not lock or unlock the OS thread, start
// goroutines that expect to share its namespace, or block for long.
func (n *NS) Do(f func() error) error {
	return inFreshThread(func() error {
		if err := netns.Set(n.handle); err != nil {
			return fmt.Errorf("enter netns %s: %w", n.Name, err)
		}
		return f()
	})
}

// inFreshThread runs f in a new goroutine locked to its OS thread. If the
// thread's namespace cannot be restored afterwards, the goroutine exits still
// locked and Go discards the thread, so no other goroutine ever runs in the
// wrong namespace.
func inFreshThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("get current netns: %w", err)
			return // thread stays locked and dies with the goroutine
		}
		defer orig.Close()
		ferr := f()
		if err := netns.Set(orig); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("restore netns: %w", err))
			return // never unlock a thread in the wrong namespace
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
