package ns

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// The namespace launcher. A child is started as a re-execution of the
// current binary with HelperArg as its first argument and its Plan in the
// environment. Before anything else, main (or TestMain) calls
// MaybeRunHelper, which enters a private mount namespace and the target
// network namespace, applies the plan's mounts and execs the real program.
// The real program therefore keeps the child's PID (it is the harness's
// direct child, waited for and signalled by PID) and the cgroup it was
// cloned into.

// HelperArg marks a re-execution as the namespace launcher.
const HelperArg = "__twnsbench_nsexec"

const planEnv = "TWNSBENCH_NSEXEC_PLAN"

// Mount is one change to the child's private mount namespace.
type Mount struct {
	// Kind is "bind" (Source onto Target), "tmpfs" (a fresh tmpfs on
	// Target), "mkdir" (create directory Target) or "overlay" (Source's
	// files over directory Target, read-only; see applyOverlay).
	Kind   string `json:"kind"`
	Source string `json:"source,omitempty"`
	Target string `json:"target"`
}

// Plan is what the launcher does before exec.
type Plan struct {
	NetNS  string   `json:"netns"`  // path of the network namespace to enter
	Mounts []Mount  `json:"mounts"` // applied in order, after entering NetNS
	Argv   []string `json:"argv"`   // Argv[0] is an absolute path
	// HostMounts keeps the caller's mount namespace, so that what the
	// program mounts is the host's: a machine's agent in an emulated
	// multi-host test creates named network namespaces everyone sees.
	// Mounts must then be empty.
	HostMounts bool `json:"host_mounts,omitempty"`
	// CPUs, when set, are the only CPUs the program may run on: set on
	// the launcher's thread before exec, so every thread and child the
	// program makes inherits them (a thread inherits only its creator's).
	CPUs []int `json:"cpus,omitempty"`
}

// HelperCommand returns the argv and the extra environment variable that run
// plan through the launcher.
func HelperCommand(plan Plan) (argv []string, env string, err error) {
	if len(plan.Argv) == 0 || plan.Argv[0] == "" || plan.Argv[0][0] != '/' {
		return nil, "", fmt.Errorf("nsexec: program must be an absolute path, got %q", plan.Argv)
	}
	if plan.HostMounts && len(plan.Mounts) > 0 {
		return nil, "", fmt.Errorf("nsexec: %s: mounts in the host's mount namespace refused", plan.Argv[0])
	}
	self, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("nsexec: find own binary: %w", err)
	}
	b, err := json.Marshal(plan)
	if err != nil {
		return nil, "", fmt.Errorf("nsexec: encode plan: %w", err)
	}
	return []string{self, HelperArg}, planEnv + "=" + string(b), nil
}

// MaybeRunHelper runs the launcher and never returns when this process was
// started as one; otherwise it returns at once.
func MaybeRunHelper() {
	if len(os.Args) < 2 || os.Args[1] != HelperArg {
		return
	}
	err := runHelper()
	fmt.Fprintf(os.Stderr, "twnsbench nsexec: %v\n", err)
	os.Exit(127)
}

func runHelper() error {
	// Namespaces and mounts belong to this thread; exec replaces the process
	// from it, so everything below must happen on one locked thread.
	runtime.LockOSThread()
	var plan Plan
	if err := json.Unmarshal([]byte(os.Getenv(planEnv)), &plan); err != nil {
		return fmt.Errorf("decode plan: %w", err)
	}
	if !plan.HostMounts {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("unshare mount namespace: %w", err)
		}
		// Slave: the host's mounts still propagate in, ours never leak out.
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			return fmt.Errorf("make / rslave: %w", err)
		}
	}
	fd, err := unix.Open(plan.NetNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", plan.NetNS, err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter netns %s: %w", plan.NetNS, err)
	}
	unix.Close(fd)
	if err := pin(plan.CPUs); err != nil {
		return err
	}
	// Overlays first: an overlay shows its lower directory's own files,
	// not what is mounted beneath it (the hosts file's bind mount).
	for _, overlays := range []bool{true, false} {
		for _, m := range plan.Mounts {
			if (m.Kind == "overlay") != overlays {
				continue
			}
			if err := applyMount(m); err != nil {
				return err
			}
		}
	}
	// The caller chose the environment (proc.Environ: no more of the
	// operator's than it needs); only the plan goes.
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if len(kv) <= len(planEnv) || kv[:len(planEnv)+1] != planEnv+"=" {
			env = append(env, kv)
		}
	}
	if err := unix.Exec(plan.Argv[0], plan.Argv, env); err != nil {
		return fmt.Errorf("exec %s: %w", plan.Argv[0], err)
	}
	return nil
}

// pin keeps this thread, and so the program it execs, on cpus; nil leaves
// the affinity inherited from the harness.
func pin(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	var set unix.CPUSet
	set.Zero()
	for _, c := range cpus {
		if c < 0 || c >= len(set)*64 {
			return fmt.Errorf("pin to CPUs %v: no CPU %d", cpus, c)
		}
		set.Set(c)
	}
	// pid 0 is this thread, the one that execs.
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to CPUs %v: %w", cpus, err)
	}
	return nil
}

func applyMount(m Mount) error {
	var err error
	switch m.Kind {
	case "overlay":
		err = applyOverlay(m)
	case "bind":
		err = unix.Mount(m.Source, m.Target, "", unix.MS_BIND, "")
	case "tmpfs":
		err = unix.Mount("tmpfs", m.Target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755")
	case "mkdir":
		err = os.MkdirAll(m.Target, 0o755)
	default:
		err = fmt.Errorf("unknown kind")
	}
	if err != nil {
		return fmt.Errorf("mount %s %s -> %s: %w", m.Kind, m.Source, m.Target, err)
	}
	return nil
}

// applyOverlay shows Source's files in place of Target's, the rest of
// Target unchanged. Bind-mounting single files would do the same until the
// host replaces one of them by rename, as adduser and apt do with
// /etc/passwd: the mount stays on the old file and the child then sees the
// host's new one (a run's sshd lost its bench account to an apt install).
// An overlay's upper layer wins whatever the lower does. Where the kernel
// has no overlayfs, the files are bind-mounted one by one.
func applyOverlay(m Mount) error {
	opts := "lowerdir=" + m.Source + ":" + m.Target
	if err := unix.Mount("overlay", m.Target, "overlay", unix.MS_RDONLY, opts); err == nil {
		return nil
	}
	entries, err := os.ReadDir(m.Source)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := unix.Mount(filepath.Join(m.Source, e.Name()), filepath.Join(m.Target, e.Name()), "", unix.MS_BIND, ""); err != nil {
			return err
		}
	}
	return nil
}
