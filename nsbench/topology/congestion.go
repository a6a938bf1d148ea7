package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	sysctlCC        = "/proc/sys/net/ipv4/tcp_congestion_control"
	sysctlAllowedCC = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
	sysctlAvailCC   = "/proc/sys/net/ipv4/tcp_available_congestion_control"
)

// applyCongestion sets the default TCP congestion control in every role
// namespace. Outside the init namespace the kernel only accepts algorithms
// in the global allowed list (EPERM otherwise); when the requested one is
// available but not allowed, the list is extended for the few milliseconds
// it takes to set the namespaces' defaults and then restored. A namespace
// keeps its default after the restore. The change is recorded.
func (t *Topology) applyCongestion() error {
	want := t.Spec.Congestion
	if want == "" {
		cc, err := t.readCongestion()
		t.Congestion = cc + " (inherited from the host)"
		return err
	}
	err := t.setCongestionLocked(want)
	if err != nil {
		return fmt.Errorf("congestion control %s: %w", want, err)
	}
	cc, err := t.readCongestion()
	if err != nil {
		return err
	}
	if cc != want {
		return fmt.Errorf("congestion control: asked for %s, namespaces use %s", want, cc)
	}
	t.Congestion = cc
	return nil
}

// setCongestionLocked sets the namespaces' default under allowedLock and,
// when the kernel refuses an algorithm the host does not allow, extends the
// global allowed list, sets it and restores the list before unlocking. Two
// runs (or two topologies of one test binary) doing this at once would
// otherwise read each other's extended list as the original: the first
// restore pulls the algorithm out from under the second's writes (EPERM),
// and the last leaves the host's list extended. Trying first under the lock
// also keeps a run from riding on another's extension unrecorded.
func (t *Topology) setCongestionLocked(want string) error {
	unlock, err := lockAllowedCongestion()
	if err != nil {
		return err
	}
	defer unlock()
	err = t.setCongestion(want)
	if !errors.Is(err, syscall.EPERM) {
		return err
	}
	restore, change, err := allowCongestion(want)
	if err != nil {
		return err
	}
	err = t.setCongestion(want)
	if rerr := restore(); rerr != nil {
		err = errors.Join(err, rerr)
	}
	t.SysctlChanges = append(t.SysctlChanges, change())
	return err
}

// allowedLockWait bounds the wait for another run's few milliseconds under
// the lock; longer means a holder is stuck.
const allowedLockWait = 10 * time.Second

// lockAllowedCongestion takes an exclusive flock on the allowed list's own
// sysctl file, which every process in this network namespace opens as the
// same inode: it serialises the extend-set-restore of every twnsbench on this
// host (and of every topology in one process: each open is its own lock
// owner) without creating a file, and the kernel drops it when the holder
// dies.
func lockAllowedCongestion() (unlock func(), err error) {
	f, err := os.Open(sysctlAllowedCC)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", sysctlAllowedCC, err)
	}
	deadline := time.Now().Add(allowedLockWait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock %s (another run changing it for over %s?): %w", sysctlAllowedCC, allowedLockWait, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (t *Topology) setCongestion(algo string) error {
	for _, name := range t.Spec.Roles {
		// /proc/sys/net resolves to the opening thread's namespace.
		err := t.Roles[name].NS.Do(func() error {
			return os.WriteFile(sysctlCC, []byte(algo), 0)
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// readCongestion returns the namespaces' common algorithm.
func (t *Topology) readCongestion() (string, error) {
	seen := ""
	for _, name := range t.Spec.Roles {
		var b []byte
		err := t.Roles[name].NS.Do(func() (err error) {
			b, err = os.ReadFile(sysctlCC)
			return err
		})
		if err != nil {
			return "", fmt.Errorf("%s: read congestion control: %w", name, err)
		}
		cc := strings.TrimSpace(string(b))
		if seen != "" && cc != seen {
			return "", fmt.Errorf("congestion control differs between namespaces: %s vs %s", seen, cc)
		}
		seen = cc
	}
	return seen, nil
}

// allowCongestion adds algo to the global allowed list. restore puts the
// original list back; change describes what happened, for the report.
func allowCongestion(algo string) (restore func() error, change func() string, err error) {
	avail, err := os.ReadFile(sysctlAvailCC)
	if err != nil {
		return nil, nil, err
	}
	if !contains(strings.Fields(string(avail)), algo) {
		return nil, nil, fmt.Errorf("not available in this kernel (available: %s)", strings.TrimSpace(string(avail)))
	}
	orig, err := os.ReadFile(sysctlAllowedCC)
	if err != nil {
		return nil, nil, err
	}
	origList := strings.TrimSpace(string(orig))
	extended := origList + " " + algo
	if err := os.WriteFile(sysctlAllowedCC, []byte(extended), 0); err != nil {
		return nil, nil, fmt.Errorf("extend %s: %w", sysctlAllowedCC, err)
	}
	start := time.Now()
	var held time.Duration
	restore = func() error {
		err := os.WriteFile(sysctlAllowedCC, []byte(origList), 0)
		held = time.Since(start)
		if err != nil {
			return fmt.Errorf("restore %s to %q: %w", sysctlAllowedCC, origList, err)
		}
		return nil
	}
	change = func() string {
		return fmt.Sprintf("net.ipv4.tcp_allowed_congestion_control %q → %q for %.1f ms while setting the namespaces' default, then restored",
			origList, extended, float64(held.Microseconds())/1000)
	}
	return restore, change, nil
}

// CheckCongestion reports whether the kernel can use algo as a TCP
// congestion control: it is available (built in or loaded), or a module
// for it exists that the kernel loads on first use. It creates nothing.
func CheckCongestion(algo string) error {
	b, err := os.ReadFile(sysctlAvailCC)
	if err != nil {
		return fmt.Errorf("read the available congestion controls: %w", err)
	}
	avail := strings.Fields(string(b))
	for _, a := range avail {
		if a == algo {
			return nil
		}
	}
	if congestionModule(algo) {
		return nil
	}
	return fmt.Errorf("--congestion %s: not available in this kernel (available: %s; no tcp_%s module to load)", algo, strings.Join(avail, ", "), algo)
}

// congestionModule reports whether the running kernel ships algo as a
// loadable module.
func congestionModule(algo string) bool {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return false
	}
	var rel []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		rel = append(rel, byte(c))
	}
	matches, _ := filepath.Glob(filepath.Join("/lib/modules", string(rel), "kernel/net/ipv4", "tcp_"+algo+".ko*"))
	return len(matches) > 0
}
