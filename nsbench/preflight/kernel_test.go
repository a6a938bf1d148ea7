package preflight

import (
	"errors"
	"testing"
)

// fakeKernel stands in for kernels this machine cannot boot: with modules,
// or without a config. Each name in loaded is both a module under
// /sys/module and a registered generic-netlink family.
func fakeKernel(cfg map[string]string, noModules string, loaded ...string) kernel {
	return kernel{
		config:    cfg,
		noModules: noModules,
		loaded: func(m string) bool {
			for _, l := range loaded {
				if l == m {
					return true
				}
			}
			return false
		},
		genlFamily: func(name string) error {
			for _, l := range loaded {
				if l == name {
					return nil
				}
			}
			return errors.New("no such file or directory")
		},
	}
}

func TestKernelFeatureLogic(t *testing.T) {
	debian := map[string]string{"CONFIG_MODULES": "y", "CONFIG_WIREGUARD": "m", "CONFIG_NET_SCH_NETEM": "m", "CONFIG_VETH": "y"}
	builtinWG := map[string]string{"CONFIG_WIREGUARD": "y"}
	tests := []struct {
		name    string
		k       kernel
		feature string
		present bool
		how     string
	}{
		{"built in", fakeKernel(debian, ""), "veth", true, "built in (CONFIG_VETH=y)"},
		{"module, loadable", fakeKernel(debian, ""), "wireguard", true, "module (CONFIG_WIREGUARD=m)"},
		{"module, loaded, family found", fakeKernel(debian, "", "wireguard"), "wireguard", true, "module, loaded (CONFIG_WIREGUARD=m)"},
		{"module, loading disabled", fakeKernel(debian, "module loading is disabled (kernel.modules_disabled=1)"), "netem", false,
			"CONFIG_NET_SCH_NETEM=m, but module loading is disabled (kernel.modules_disabled=1)"},
		{"module, loaded despite disabled loading", fakeKernel(debian, "module loading is disabled (kernel.modules_disabled=1)", "sch_netem"), "netem", true,
			"module, loaded (CONFIG_NET_SCH_NETEM=m)"},
		{"not set", fakeKernel(debian, ""), "bridge", false, "CONFIG_BRIDGE is not set"},
		{"built in, family missing", fakeKernel(builtinWG, ""), "wireguard", false,
			`built in (CONFIG_WIREGUARD=y), but generic-netlink family "wireguard" not found: no such file or directory`},
		{"no config, in /sys/module", fakeKernel(nil, "", "bridge"), "bridge", true, "/sys/module/bridge present"},
		{"no config, not in /sys/module", fakeKernel(nil, ""), "veth", true, "unknown (will be tried)"},
		{"unknown name", fakeKernel(debian, ""), "ipsec", false, `unknown kernel feature "ipsec"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			present, how := tt.k.feature(tt.feature)
			if present != tt.present || how != tt.how {
				t.Errorf("feature(%q) = %v, %q\nwant               %v, %q", tt.feature, present, how, tt.present, tt.how)
			}
		})
	}
}

// thisMachineKernel skips unless /proc/config.gz describes the project's
// machines: veth, bridge and TUN built in, no WireGuard, no netem, no modules.
func thisMachineKernel(t *testing.T) {
	t.Helper()
	cfg, err := readKernelConfig("/proc/config.gz")
	if err != nil {
		t.Skipf("not this project's kernel (%v); the exact values below are for kernel 6.18 without modules", err)
	}
	for sym, want := range map[string]string{
		"CONFIG_VETH": "y", "CONFIG_BRIDGE": "y", "CONFIG_TUN": "y",
		"CONFIG_WIREGUARD": "", "CONFIG_NET_SCH_NETEM": "", "CONFIG_MODULES": "",
	} {
		if cfg[sym] != want {
			t.Skipf("not this project's kernel: /proc/config.gz has %s=%q, the exact values below need %q", sym, cfg[sym], want)
		}
	}
}

func TestKernelFeatureThisMachine(t *testing.T) {
	thisMachineKernel(t)
	want := map[string]struct {
		present bool
		how     string
	}{
		"veth":      {true, "built in (CONFIG_VETH=y)"},
		"bridge":    {true, "built in (CONFIG_BRIDGE=y)"},
		"tun":       {true, "built in (CONFIG_TUN=y)"},
		"wireguard": {false, "CONFIG_WIREGUARD is not set"},
		"netem":     {false, "CONFIG_NET_SCH_NETEM is not set"},
	}
	for name, w := range want {
		present, how := KernelFeature(name)
		if present != w.present || how != w.how {
			t.Errorf("KernelFeature(%q) = %v, %q, want %v, %q", name, present, how, w.present, w.how)
		}
	}
}
