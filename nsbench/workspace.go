package nsbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	crand "crypto/rand"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/residue"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// PrivateBase holds each run's private directory (keys, configs, the
// payload tmpfs), named by the run's prefix.
const PrivateBase = "/tmp"

// privateDir is the run's private directory.
func privateDir(prefix string) string { return filepath.Join(PrivateBase, prefix) }

// cgroupDir is the run's cgroup, parent of one cgroup per role.
func cgroupDir(root, prefix string) string { return role.NewTree(root, prefix).Dir() }

// payload is the scp payload on its own tmpfs, on the server's host.
type payload struct {
	Dir         string
	Large, Warm string
	Probe       string
	LargeBytes  int64
	WarmBytes   int64
}

// payloadSize asks for a payload of Large and Warm bytes in Dir.
type payloadSize struct {
	Dir         string
	Large, Warm int64
}

// The payload is made where scp reads it: on the server role's host.
var (
	mountPayloadOp = role.NewOp("nsbench.mount-payload", func(ctx context.Context, a payloadSize) (payload, error) {
		if err := role.CheckPath(ctx, a.Dir); err != nil {
			return payload{}, err
		}
		p, err := mountPayload(a.Dir, a.Large, a.Warm)
		if err != nil {
			if p != nil {
				err = errors.Join(err, p.unmount())
			}
			return payload{}, err
		}
		return *p, nil
	})
	unmountPayloadOp = role.NewOp("nsbench.unmount-payload", func(ctx context.Context, p payload) (role.Nothing, error) {
		if err := role.CheckPath(ctx, p.Dir); err != nil {
			return role.Nothing{}, err
		}
		return role.Nothing{}, p.unmount()
	})
)

// mountPayload mounts a tmpfs sized for the payloads under dir and fills it
// with random bytes (incompressible, so no transport can cheat with
// compression). Served from RAM, the disk never limits scp.
func mountPayload(dir string, large, warm int64) (*payload, error) {
	p := &payload{Dir: filepath.Join(dir, "payload"), LargeBytes: large, WarmBytes: warm}
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	size := large + warm + 1<<20
	if err := unix.Mount("tmpfs", p.Dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
		"mode=0755,size="+strconv.FormatInt(size, 10)); err != nil {
		return nil, fmt.Errorf("payload: mount tmpfs of %d bytes: %w", size, err)
	}
	p.Large = filepath.Join(p.Dir, "payload.bin")
	p.Warm = filepath.Join(p.Dir, "warm.bin")
	p.Probe = filepath.Join(p.Dir, "probe.bin")
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

// unmount removes the payload tmpfs, if this mount namespace has one at
// p.Dir. Safe to call twice.
func (p *payload) unmount() error {
	if !slices.Contains(tmpfsMounts(), p.Dir) {
		return nil
	}
	return unmountNoFollow(p.Dir)
}

// unmountNoFollow detaches the mount at point, never one a symlink there
// points at.
func unmountNoFollow(point string) error {
	if err := unix.Unmount(point, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount payload %s: %w", point, err)
	}
	return nil
}

// tmpfsMounts lists the points where this mount namespace has a tmpfs, as
// the kernel resolved them (/proc/self/mountinfo).
func tmpfsMounts() []string {
	var points []string
	for _, m := range residue.Mounts() {
		if m.FSType == "tmpfs" {
			points = append(points, m.Point)
		}
	}
	return points
}

// payloadMounts lists the payloads mounted in the private directory dir:
// a tmpfs at dir/<role>/payload, or dir/payload where runs before roles
// kept it. Nothing else there is twnsbench's to unmount.
func payloadMounts(dir string) []string {
	var points []string
	for _, p := range tmpfsMounts() {
		if filepath.Base(p) == "payload" && (filepath.Dir(p) == dir || filepath.Dir(filepath.Dir(p)) == dir) {
			points = append(points, p)
		}
	}
	return points
}

// errNotOurs marks a directory named like twnsbench's that twnsbench did
// not make: /tmp is everyone's, and anyone may create /tmp/twnsb-….
var errNotOurs = errors.New("not made by twnsbench")

// ownPrivateDir checks, before anything is done in it, that dir is a
// directory owned by root (not a symlink, nor another user's, whose
// entries could point anywhere), and returns its Lstat; nil if there is
// none. Its errors do not name dir.
func ownPrivateDir(dir string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil
		}
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, fmt.Errorf("not a directory (mode %#o), %w", st.Mode, errNotOurs)
	}
	if st.Uid != 0 {
		return nil, fmt.Errorf("owned by uid %d, not root, %w", st.Uid, errNotOurs)
	}
	return &st, nil
}

// removePrivateDir removes a run's private directory. It checks that the
// directory is root's first, unmounts only the payloads twnsbench mounted
// there, and refuses to cross into any other mount, so a bug can never
// delete outside the directory.
func removePrivateDir(dir string) error {
	if !strings.HasPrefix(filepath.Base(dir), topology.Prefix) {
		return fmt.Errorf("refusing to remove %s: not a twnsbench directory", dir)
	}
	st, err := ownPrivateDir(dir)
	if err != nil {
		return fmt.Errorf("refusing to remove %s: %w", dir, err)
	}
	if st == nil {
		return nil
	}
	for _, m := range payloadMounts(dir) {
		if err := unmountNoFollow(m); err != nil {
			return fmt.Errorf("remove %s: %w", dir, err)
		}
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

// ownerFile in a run's private directory holds the harness's PID, so clean
// can tell a live run from a dead one's leftovers.
const ownerFile = "harness.pid"
