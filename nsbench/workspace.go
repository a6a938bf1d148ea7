package nsbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	crand "crypto/rand"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// PrivateBase holds each run's private directory (keys, configs, the
// payload tmpfs), named by the run's prefix.
const PrivateBase = "/tmp"

// privateDir is the run's private directory.
func privateDir(prefix string) string { return filepath.Join(PrivateBase, prefix) }

// cgroupDir is the run's cgroup, parent of one cgroup per role.
func cgroupDir(root, prefix string) string { return filepath.Join(root, prefix) }

// payload is the scp payload on its own tmpfs.
type payload struct {
	dir         string
	Large, Warm string
	Probe       string
	LargeBytes  int64
	WarmBytes   int64
}

// mountPayload mounts a tmpfs sized for the payloads under dir and fills it
// with random bytes (incompressible, so no transport can cheat with
// compression). Served from RAM, the disk never limits scp.
func mountPayload(dir string, large, warm int64) (*payload, error) {
	p := &payload{dir: filepath.Join(dir, "payload"), LargeBytes: large, WarmBytes: warm}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	size := large + warm + 1<<20
	if err := unix.Mount("tmpfs", p.dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
		"mode=0755,size="+strconv.FormatInt(size, 10)); err != nil {
		return nil, fmt.Errorf("payload: mount tmpfs of %d bytes: %w", size, err)
	}
	p.Large = filepath.Join(p.dir, "payload.bin")
	p.Warm = filepath.Join(p.dir, "warm.bin")
	p.Probe = filepath.Join(p.dir, "probe.bin")
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		return p, fmt.Errorf("payload: seed: %w", err)
	}
	src := rand.NewChaCha8(seed)
	for _, f := range []struct {
		path string
		n    int64
	}{{p.Large, large}, {p.Warm, warm}, {p.Probe, 4096}} {
		if err := writeRandom(f.path, f.n, src); err != nil {
			return p, err
		}
	}
	return p, nil
}

func writeRandom(path string, n int64, src io.Reader) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	buf := make([]byte, 4<<20)
	for left := n; left > 0; {
		chunk := buf[:min(int64(len(buf)), left)]
		src.Read(chunk) // ChaCha8.Read never fails
		if _, err := f.Write(chunk); err != nil {
			f.Close()
			return fmt.Errorf("payload: write %s: %w", filepath.Base(path), err)
		}
		left -= int64(len(chunk))
	}
	return f.Close()
}

// unmount removes the payload tmpfs. Safe to call twice.
func (p *payload) unmount() error {
	if err := unix.Unmount(p.dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount payload: %w", err)
	}
	return nil
}

// removePrivateDir removes a run's private directory. It unmounts a payload
// left mounted and refuses to cross into any other mount, so a bug can never
// delete outside the directory.
func removePrivateDir(dir string) error {
	if !strings.HasPrefix(filepath.Base(dir), topology.Prefix) {
		return fmt.Errorf("refusing to remove %s: not a twnsbench directory", dir)
	}
	(&payload{dir: filepath.Join(dir, "payload")}).unmount()
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	if err := checkSameDevice(dir, st.Dev); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

func checkSameDevice(dir string, dev uint64) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err == nil && st.Dev != dev {
			return fmt.Errorf("refusing to remove %s: %s is another mount", dir, path)
		}
		return nil
	})
}

// runCgroups is the run's cgroup and one directory per role under it.
//
// Every process lives in a leaf, so that the memory controller can be
// turned on where the host delegates it: <prefix>/<role>/base holds the
// role's fixtures and tools, <prefix>/<role>/t-<transport> (forTransport)
// a transport's own processes. A role's CPU is its directory's, children
// included, as the reference counts it.
type runCgroups struct {
	root, prefix string
	roles        map[string]*proc.Cgroup // each role's directory (CPU is read here)
}

// dir is the run's cgroup.
func (c *runCgroups) dir() string { return cgroupDir(c.root, c.prefix) }

// create makes the run's cgroup, one per role, and each role's base leaf,
// which it returns by role.
func (c *runCgroups) create(roles []string) (base map[string]*proc.Cgroup, err error) {
	c.roles, base = map[string]*proc.Cgroup{}, map[string]*proc.Cgroup{}
	run, err := proc.NewCgroup(c.dir())
	if err != nil {
		return base, err
	}
	memory := run.EnableMemory()
	for _, r := range roles {
		dir, err := proc.NewCgroup(filepath.Join(run.Path, r))
		if err != nil {
			return base, err
		}
		c.roles[r] = dir
		if memory {
			dir.EnableMemory()
		}
		if base[r], err = proc.NewCgroup(filepath.Join(dir.Path, "base")); err != nil {
			return base, err
		}
	}
	return base, nil
}

// forTransport creates a transport's leaf in every role.
func (c *runCgroups) forTransport(transport string) (map[string]*proc.Cgroup, error) {
	cgs := map[string]*proc.Cgroup{}
	for role, dir := range c.roles {
		cg, err := proc.NewCgroup(filepath.Join(dir.Path, "t-"+transport))
		if err != nil {
			return cgs, err
		}
		cgs[role] = cg
	}
	return cgs, nil
}

// beside creates a cgroup named name beside the roles' (the WAN
// forwarder's).
func (c *runCgroups) beside(name string) (*proc.Cgroup, error) {
	return proc.NewCgroup(filepath.Join(c.dir(), name))
}

// remove kills what is left in the run's cgroups and removes them.
func (c *runCgroups) remove(ctx context.Context) error { return removeCgroups(ctx, c.root, c.prefix) }

// removeCgroups kills what is left in the run's cgroups and removes them.
func removeCgroups(ctx context.Context, root, prefix string) error {
	dir := cgroupDir(root, prefix)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove cgroups: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, (&proc.Cgroup{Path: filepath.Join(dir, e.Name())}).Remove(ctx))
		}
	}
	errs = append(errs, (&proc.Cgroup{Path: dir}).Remove(ctx))
	return errors.Join(errs...)
}

// ownerFile in a run's private directory holds the harness's PID, so clean
// can tell a live run from a dead one's leftovers.
const ownerFile = "harness.pid"
