package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup is a cgroup v2 directory owned by the run. Processes are placed in
// it at clone time, so everything a role runs, including the children its
// daemons fork (sshd sessions), is accounted to the role.
type Cgroup struct {
	Path string
}

// Cgroup2Root returns the mount point of the unified (v2) hierarchy: /sys/fs/cgroup
// on pure v2 systems, /sys/fs/cgroup/unified on hybrid ones.
func Cgroup2Root() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("find cgroup2 mount: %w", err)
	}
	defer f.Close()
	return parseCgroup2Mount(f)
}

func parseCgroup2Mount(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// 36 25 0:31 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, fstype := strings.Fields(pre), strings.Fields(post)
		if len(fields) >= 5 && len(fstype) >= 1 && fstype[0] == "cgroup2" {
			return fields[4], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("find cgroup2 mount: %w", err)
	}
	return "", errors.New("no cgroup2 (unified) hierarchy is mounted")
}

// NewCgroup creates the directory path (and its parents) in the cgroup2 tree.
func NewCgroup(path string) (*Cgroup, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", path, err)
	}
	return &Cgroup{Path: path}, nil
}

// UsageUsec reads the cumulative CPU time of every process that ever ran in
// the cgroup (cpu.stat usage_usec; present without the cpu controller).
func (c *Cgroup) UsageUsec() (uint64, error) {
	b, err := os.ReadFile(filepath.Join(c.Path, "cpu.stat"))
	if err != nil {
		return 0, fmt.Errorf("read cgroup cpu.stat: %w", err)
	}
	return ParseCPUStatUsage(b)
}

// ParseCPUStatUsage extracts usage_usec from a cgroup v2 cpu.stat file.
func ParseCPUStatUsage(b []byte) (uint64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == "usage_usec" {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse cpu.stat usage_usec %q: %w", v, err)
			}
			return n, nil
		}
	}
	return 0, errors.New("cpu.stat has no usage_usec line")
}

// EnableMemory turns the memory controller on for c's children, when the
// kernel offers it to c (cgroup.controllers), so that they report
// memory.peak. It changes only c, a cgroup of the run; a host whose
// hierarchy does not delegate memory keeps its setting and this returns
// false. c must hold no process itself (cgroup v2's no-internal-process
// rule).
func (c *Cgroup) EnableMemory() bool {
	b, err := os.ReadFile(filepath.Join(c.Path, "cgroup.controllers"))
	if err != nil || !slices.Contains(strings.Fields(string(b)), "memory") {
		return false
	}
	return os.WriteFile(filepath.Join(c.Path, "cgroup.subtree_control"), []byte("+memory"), 0) == nil
}

// MemoryPeakKB is the highest memory use of the cgroup's processes
// together, children included (memory.peak, kernel ≥ 5.19 with the memory
// controller), in kB; ok is false where the kernel does not say.
func (c *Cgroup) MemoryPeakKB() (kb int64, ok bool) {
	b, err := os.ReadFile(filepath.Join(c.Path, "memory.peak"))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, false
	}
	return n / 1024, true
}

// PIDs lists the processes currently in the cgroup.
func (c *Cgroup) PIDs() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(c.Path, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("read cgroup.procs: %w", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Kill sends SIGKILL to every process in the cgroup. Every one of them
// descends from a process the run started there.
func (c *Cgroup) Kill() error {
	err := os.WriteFile(filepath.Join(c.Path, "cgroup.kill"), []byte("1"), 0)
	if err == nil || errors.Is(err, os.ErrNotExist) && !exists(c.Path) {
		return nil
	}
	// Kernels before 5.14 have no cgroup.kill: signal each member.
	pids, perr := c.PIDs()
	if perr != nil {
		return errors.Join(err, perr)
	}
	for _, pid := range pids {
		if kerr := unix.Kill(pid, syscall.SIGKILL); kerr != nil && !errors.Is(kerr, unix.ESRCH) {
			return fmt.Errorf("kill pid %d: %w", pid, kerr)
		}
	}
	return nil
}

// Remove kills what is left in the cgroup and its children, waits until
// each is empty and removes them, children first. Safe to call twice.
func (c *Cgroup) Remove(ctx context.Context) error {
	if !exists(c.Path) {
		return nil
	}
	entries, _ := os.ReadDir(c.Path)
	for _, e := range entries {
		if e.IsDir() {
			if err := (&Cgroup{Path: filepath.Join(c.Path, e.Name())}).Remove(ctx); err != nil {
				return err
			}
		}
	}
	if err := c.Kill(); err != nil {
		return fmt.Errorf("remove cgroup %s: %w", c.Path, err)
	}
	// The kernel empties a killed cgroup asynchronously; rmdir says EBUSY
	// until it has. Poll the condition with a deadline.
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		err := unix.Rmdir(c.Path)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("remove cgroup %s: %w", c.Path, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("remove cgroup %s: still busy: %w", c.Path, ctx.Err())
		case <-time.After(delay):
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ownerXattr marks a run's cgroup with its harness's PID. Only a process
// with CAP_SYS_ADMIN can set a trusted.* attribute, so no other user can
// forge it; and unlike an owner file under /tmp it is seen by every mount
// namespace that shares the cgroup hierarchy (emulated machines, a
// container with the host's /sys/fs/cgroup).
const ownerXattr = "trusted.twnsbench.harness"

// MarkOwner records pid as the process that owns the cgroup. Where the
// kernel does not keep xattrs on cgroups (before 5.x kernfs) it does
// nothing: the owner file in the run's private directory still says.
func (c *Cgroup) MarkOwner(pid int) error {
	err := unix.Setxattr(c.Path, ownerXattr, []byte(strconv.Itoa(pid)), 0)
	if errors.Is(err, unix.ENOTSUP) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark cgroup %s as pid %d's: %w", c.Path, pid, err)
	}
	return nil
}

// Owner reads the PID MarkOwner recorded; ok is false where none is.
func (c *Cgroup) Owner() (pid int, ok bool) {
	buf := make([]byte, 16)
	n, err := unix.Getxattr(c.Path, ownerXattr, buf)
	if err != nil {
		return 0, false
	}
	pid, err = strconv.Atoi(string(buf[:n]))
	return pid, err == nil && pid > 0
}
