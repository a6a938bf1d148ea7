package wg

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
)

// Mode is the user's choice of implementation (--wireguard).
type Mode string

const (
	Auto      Mode = "auto"      // the kernel's when it has WireGuard, else wireguard-go
	Kernel    Mode = "kernel"    // the kernel's, or refuse
	Userspace Mode = "userspace" // wireguard-go, whatever the kernel has
)

// ParseMode parses --wireguard's value; "" is Auto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case "":
		return Auto, nil
	case Auto, Kernel, Userspace:
		return m, nil
	default:
		return "", fmt.Errorf("--wireguard %q: want auto, kernel or userspace", s)
	}
}

// Impl is the implementation a device runs on.
type Impl string

const (
	ImplKernel    Impl = "kernel"
	ImplUserspace Impl = "userspace"
)

// ErrNoKernel says the running kernel has no WireGuard; the error that
// wraps it says why and what to use instead.
var ErrNoKernel = errors.New("this kernel has no WireGuard")

// Choice is the implementation a run uses, and why.
type Choice struct {
	Impl Impl
	// Why is the reason in a few words: "kernel WireGuard: built in
	// (CONFIG_WIREGUARD=y)", "chosen with --wireguard userspace", "kernel
	// module unavailable".
	Why string
	// Fallback is set when Auto wanted the kernel's and took wireguard-go:
	// the report lists it among the fallbacks used.
	Fallback string
}

// Choose picks the implementation for mode, given whether the kernel has
// WireGuard and how that was found out (preflight.KernelFeature's answer).
// It is pure: the caller probes the kernel. Kernel mode on a kernel without
// WireGuard returns an error wrapping ErrNoKernel.
func Choose(mode Mode, kernelHas bool, how string) (Choice, error) {
	switch mode {
	case Auto, "":
		if kernelHas {
			return Choice{Impl: ImplKernel, Why: "kernel WireGuard: " + how}, nil
		}
		return Choice{
			Impl:     ImplUserspace,
			Why:      "kernel module unavailable",
			Fallback: "userspace wireguard-go instead of kernel WireGuard (" + how + ")",
		}, nil
	case Kernel:
		if !kernelHas {
			return Choice{}, fmt.Errorf("--wireguard kernel: %w (%s); use --wireguard userspace or auto", ErrNoKernel, how)
		}
		return Choice{Impl: ImplKernel, Why: "kernel WireGuard: " + how}, nil
	case Userspace:
		return Choice{Impl: ImplUserspace, Why: "chosen with --wireguard userspace"}, nil
	default:
		return Choice{}, fmt.Errorf("--wireguard %q: want auto, kernel or userspace", mode)
	}
}

// goModule is wireguard-go's module path, which the binary embeds.
const goModule = "golang.zx2c4.com/wireguard"

// Describe names the implementation for the results' env block:
// "kernel module 1.0.0" or "wireguard-go v0.0.0-… (userspace; kernel
// module unavailable)". kernelVersion and goVersion come from KernelVersion
// and GoVersion.
func Describe(c Choice, kernelVersion, goVersion string) string {
	if c.Impl == ImplKernel {
		if kernelVersion == "" {
			return "kernel module"
		}
		return "kernel module " + kernelVersion
	}
	return "wireguard-go " + goVersion + " (userspace; " + c.Why + ")"
}

// KernelVersion is the loaded module's version (/sys/module/wireguard/version),
// or "" when the kernel does not say (built in without a version file, or
// not loaded yet).
func KernelVersion() string {
	b, err := os.ReadFile("/sys/module/wireguard/version")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// GoVersion is the version of the wireguard-go module built into this
// binary.
func GoVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown version)"
	}
	return moduleVersion(bi, goModule)
}

func moduleVersion(bi *debug.BuildInfo, path string) string {
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				d = d.Replace
			}
			return d.Version
		}
	}
	return "(unknown version)"
}
