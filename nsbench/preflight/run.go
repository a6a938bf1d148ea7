package preflight

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"golang.org/x/sys/unix"
)

// Options says what the run about to start needs.
type Options struct {
	NeedTmpfsBytes int64    // bytes to hold in tmpfs (payload and warm-up file); 0 skips the memory check
	Tools          []string // programs the run will start, e.g. iperf3, netperf, sshd

	// SizeBytes is the part of NeedTmpfsBytes that --size sets. When the
	// memory is short, the fix repeats the command line with --size reduced
	// by the shortfall. 0 means all of NeedTmpfsBytes.
	SizeBytes int64

	// Kernel are the kernel features the run's transports use where the
	// kernel has them (transport.KernelUses): each is checked, and without
	// it the check says what happens instead.
	Kernel []KernelUse
}

// KernelUse is a kernel feature a transport uses where the kernel has it.
type KernelUse struct {
	Check   string // the check's name, "kernel wireguard"; uses of one check are one line
	Feature string // KernelFeature's name, "wireguard"
	Without string // what happens without it, "userspace wireguard-go will be used"
}

// tmpfsHeadroom is memory left free beside the payload, for the processes
// of the run and the page cache they need.
const tmpfsHeadroom = 512 << 20

// Run probes the host. It creates and changes nothing.
func Run(o Options) Report {
	k := hostKernel()
	r := Report{Versions: make(map[string]string)}
	r.Checks = append(r.Checks,
		checkRoot(),
		checkNetNS(),
		checkKernel(k, "veth", "veth"),
		checkKernel(k, "bridge", "bridge"),
		checkTUN(k),
	)
	for _, u := range mergeUses(o.Kernel) {
		r.Checks = append(r.Checks, checkOptional(k, u.Check, u.Feature, u.Without))
	}
	r.Checks = append(r.Checks,
		checkOptional(k, "netem", "netem", "the WAN condition needs the userspace impairment"),
		checkCgroup(),
	)
	for _, name := range o.Tools {
		c, v := checkTool(name)
		r.Checks = append(r.Checks, c)
		if v != "" {
			r.Versions[name] = v
		}
	}
	if o.NeedTmpfsBytes > 0 {
		size := o.SizeBytes
		if size <= 0 || size > o.NeedTmpfsBytes {
			size = o.NeedTmpfsBytes
		}
		r.Checks = append(r.Checks, checkTmpfs(o.NeedTmpfsBytes, size))
	}
	return r
}

func checkRoot() Check {
	c := Check{Name: "root", Required: true}
	euid := os.Geteuid()
	c.Detail = fmt.Sprintf("euid %d", euid)
	if c.OK = euid == 0; !c.OK {
		c.Detail += ": namespaces, links and cgroups need root"
		c.Fix = "sudo " + commandLine(os.Args)
	}
	return c
}

// checkNetNS: the kernel registers /proc/PID/ns/net only with CONFIG_NET_NS.
func checkNetNS() Check {
	c := Check{Name: "network namespaces", Required: true, Detail: "/proc/self/ns/net present"}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		c.Detail = fmt.Sprintf("no network namespaces: %v", err)
		c.Fix = "none on this kernel: boot one with CONFIG_NET_NS=y"
		return c
	}
	c.OK = true
	return c
}

func checkKernel(k kernel, name, feat string) Check {
	present, how := k.feature(feat)
	c := Check{Name: name, Required: true, OK: present, Detail: how}
	if !present {
		c.Fix = "none on this kernel: boot one with " + features[feat].config + "=y"
	}
	return c
}

func checkTUN(k kernel) Check {
	c := checkKernel(k, "tun", "tun")
	if !c.OK {
		return c
	}
	const dev = "/dev/net/tun"
	fi, err := os.Stat(dev)
	switch {
	case err != nil:
		c.OK, c.Detail = false, fmt.Sprintf("%s, but %v", c.Detail, err)
		c.Fix = "sudo mkdir -p /dev/net && sudo mknod /dev/net/tun c 10 200"
	case fi.Mode()&os.ModeCharDevice == 0:
		c.OK, c.Detail = false, fmt.Sprintf("%s, but %s is not a character device", c.Detail, dev)
		c.Fix = "sudo rm " + dev + " && sudo mknod /dev/net/tun c 10 200"
	default:
		c.Detail += ", " + dev + " present"
	}
	return c
}

// mergeUses makes the uses of one check one, in the order of their first,
// saying everything that happens without it.
func mergeUses(us []KernelUse) []KernelUse {
	var out []KernelUse
	for _, u := range us {
		i := slices.IndexFunc(out, func(m KernelUse) bool { return m.Check == u.Check })
		switch {
		case i < 0:
			out = append(out, u)
		case !strings.Contains(out[i].Without, u.Without):
			out[i].Without += "; " + u.Without
		}
	}
	return out
}

// checkOptional reports a kernel path the harness can do without; fallback
// is what it uses instead.
func checkOptional(k kernel, name, feat, fallback string) Check {
	present, how := k.feature(feat)
	c := Check{Name: name, OK: present, Detail: how}
	if !present {
		c.Detail = fmt.Sprintf("not in this kernel: %s (%s)", fallback, how)
	}
	return c
}

func checkCgroup() Check {
	c := Check{Name: "cgroup v2", Required: true}
	root, err := proc.Cgroup2Root()
	if err != nil {
		c.Detail = err.Error()
		c.Fix = "sudo mkdir -p /sys/fs/cgroup/unified && sudo mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified"
		return c
	}
	stat := filepath.Join(root, "cpu.stat")
	b, err := os.ReadFile(stat)
	if err == nil {
		_, err = proc.ParseCPUStatUsage(b)
	}
	if err != nil {
		c.Detail = fmt.Sprintf("cgroup2 at %s, but %s: %v", root, stat, err)
		c.Fix = "none: this kernel's cgroup v2 has no cpu.stat (Linux 4.15+ has it)"
		return c
	}
	// Read-only probe of the right to create the role cgroups.
	if err := unix.Access(root, unix.W_OK); err != nil {
		c.Detail = fmt.Sprintf("cgroup2 at %s is not writable: %v", root, err)
		c.Fix = "sudo " + commandLine(os.Args)
		if errors.Is(err, unix.EROFS) {
			c.Fix = "sudo mount -o remount,rw " + root
		}
		return c
	}
	c.OK, c.Detail = true, fmt.Sprintf("cgroup2 at %s, cpu.stat usage_usec readable", root)
	return c
}

func checkTmpfs(need, size int64) Check {
	avail, err := memAvailable()
	if err != nil {
		return Check{Name: "tmpfs room", Required: true, Detail: err.Error(),
			Fix: "none: /proc/meminfo has no MemAvailable (Linux 3.14+)"}
	}
	return tmpfsRoom(need, size, avail, os.Args)
}

// tmpfsRoom compares need plus headroom with MemAvailable. A failure's fix
// is the command line again with --size (the size part of need) reduced by
// the shortfall, rounded down to 0.1 GiB, or to a MiB below 1 GiB.
func tmpfsRoom(need, size, avail int64, args []string) Check {
	c := Check{Name: "tmpfs room", Required: true}
	c.Detail = fmt.Sprintf("MemAvailable %.2f GiB, need %.2f GiB (tmpfs %.2f GiB + %.2f GiB headroom)",
		gib(avail), gib(need+tmpfsHeadroom), gib(need), gib(tmpfsHeadroom))
	if c.OK = avail >= need+tmpfsHeadroom; c.OK {
		return c
	}
	fit := size - (need + tmpfsHeadroom - avail)
	var arg string
	switch {
	case fit >= 1<<30:
		arg = fmt.Sprintf("%gGiB", math.Floor(gib(fit)*10)/10)
	case fit >= 1<<20:
		arg = fmt.Sprintf("%dMiB", fit>>20)
	default:
		c.Fix = "none: no --size fits; stop what uses the memory"
		return c
	}
	c.Fix = commandLine(withFlag(args, "--size", arg))
	return c
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }
