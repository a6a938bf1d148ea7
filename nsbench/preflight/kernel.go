package preflight

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// feature is a kernel ability the harness uses.
type feature struct {
	config string // the Kconfig symbol
	module string // its name under /sys/module (when loaded, or built in with parameters)
	genl   string // a generic-netlink family that proves it is there; "" if none
}

var features = map[string]feature{
	"veth":      {config: "CONFIG_VETH", module: "veth"},
	"bridge":    {config: "CONFIG_BRIDGE", module: "bridge"},
	"tun":       {config: "CONFIG_TUN", module: "tun"},
	"wireguard": {config: "CONFIG_WIREGUARD", module: "wireguard", genl: "wireguard"},
	"netem":     {config: "CONFIG_NET_SCH_NETEM", module: "sch_netem"},
}

// KernelFeature says whether the running kernel has a feature: "veth",
// "bridge", "tun", "wireguard" or "netem"; how says what that rests on.
//
// The kernel config is preferred (/proc/config.gz, else
// /boot/config-RELEASE): =y is built in; =m is present when the module is
// loaded or modules can be loaded. Without a config, /sys/module/NAME
// proves presence; otherwise the answer is present with how "unknown (will
// be tried)", and the harness finds out when it creates the object.
// WireGuard, when built in or loaded, is confirmed by resolving its
// generic-netlink family. A module that is not loaded is never probed that
// way: resolving an unknown family makes the kernel load its module.
func KernelFeature(name string) (present bool, how string) {
	return hostKernel().feature(name)
}

// kernel is what the probes know about the running kernel. Tests build
// fake ones for kernels this machine cannot run (modules, no config).
type kernel struct {
	config     map[string]string // nil: no config found
	noModules  string            // why modules cannot be loaded; "" if they can
	loaded     func(module string) bool
	genlFamily func(name string) error
}

func hostKernel() kernel {
	k := kernel{
		loaded: func(m string) bool {
			_, err := os.Stat(filepath.Join("/sys/module", m))
			return err == nil
		},
		genlFamily: func(name string) error {
			_, err := netlink.GenlFamilyGet(name)
			return err
		},
	}
	release := kernelRelease()
	for _, path := range []string{"/proc/config.gz", "/boot/config-" + release} {
		if cfg, err := readKernelConfig(path); err == nil {
			k.config = cfg
			break
		}
	}
	k.noModules = modulesUnloadable(k.config, release)
	return k
}

// modulesUnloadable returns why no module can be loaded, or "".
func modulesUnloadable(cfg map[string]string, release string) string {
	if cfg != nil && cfg["CONFIG_MODULES"] != "y" {
		return "this kernel has no module support"
	}
	switch b, err := os.ReadFile("/proc/sys/kernel/modules_disabled"); {
	case errors.Is(err, os.ErrNotExist):
		return "this kernel has no module support"
	case err == nil && strings.TrimSpace(string(b)) == "1":
		return "module loading is disabled (kernel.modules_disabled=1)"
	}
	if _, err := os.Stat(filepath.Join("/lib/modules", release)); err != nil {
		return "/lib/modules/" + release + " is missing"
	}
	return ""
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

func (k kernel) feature(name string) (present bool, how string) {
	f, ok := features[name]
	if !ok {
		return false, fmt.Sprintf("unknown kernel feature %q", name)
	}
	loaded := k.loaded(f.module)
	switch v := k.config[f.config]; {
	case k.config == nil && loaded:
		present, how = true, "/sys/module/"+f.module+" present"
	case k.config == nil:
		return true, "unknown (will be tried)"
	case v == "y":
		present, how = true, "built in ("+f.config+"=y)"
	case v == "m" && loaded:
		present, how = true, "module, loaded ("+f.config+"=m)"
	case v == "m" && k.noModules == "":
		// Not probed further: that would load it.
		return true, "module (" + f.config + "=m)"
	case v == "m":
		return false, f.config + "=m, but " + k.noModules
	default:
		return false, f.config + " is not set"
	}
	if f.genl != "" {
		if err := k.genlFamily(f.genl); err != nil {
			return false, fmt.Sprintf("%s, but generic-netlink family %q not found: %v", how, f.genl, err)
		}
	}
	return present, how
}
