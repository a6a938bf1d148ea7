package preflight

import (
	"os"
	"strings"
	"testing"
)

func TestRunThisMachine(t *testing.T) {
	thisMachineKernel(t)
	// As the wireguard row (auto), wireguard-kernel and wireguard again
	// state it: one line, saying both.
	auto := KernelUse{Check: "kernel wireguard", Feature: "wireguard", Without: "userspace wireguard-go will be used"}
	r := Run(Options{NeedTmpfsBytes: 1 << 30, Kernel: []KernelUse{auto,
		{Check: "kernel wireguard", Feature: "wireguard", Without: "wireguard-kernel cannot run"}, auto}})
	want := map[string]Check{
		"veth":   {Name: "veth", Detail: "built in (CONFIG_VETH=y)", OK: true, Required: true},
		"bridge": {Name: "bridge", Detail: "built in (CONFIG_BRIDGE=y)", OK: true, Required: true},
		"tun":    {Name: "tun", Detail: "built in (CONFIG_TUN=y), /dev/net/tun present", OK: true, Required: true},
		"kernel wireguard": {Name: "kernel wireguard",
			Detail: "not in this kernel: userspace wireguard-go will be used; wireguard-kernel cannot run (CONFIG_WIREGUARD is not set)"},
		"netem": {Name: "netem",
			Detail: "not in this kernel: the WAN condition needs the userspace impairment (CONFIG_NET_SCH_NETEM is not set)"},
		"network namespaces": {Name: "network namespaces", Detail: "/proc/self/ns/net present", OK: true, Required: true},
	}
	got := make(map[string]Check)
	for _, c := range r.Checks {
		got[c.Name] = c
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("check %q = %+v\nwant %+v", name, got[name], w)
		}
	}
	if root := os.Geteuid() == 0; got["root"].OK != root {
		t.Errorf("root check = %+v with euid %d", got["root"], os.Geteuid())
	}
	// Without root the hierarchy is readable but not writable.
	if c := got["cgroup v2"]; c.OK != (os.Geteuid() == 0) || !strings.HasPrefix(c.Detail, "cgroup2 at /") {
		t.Errorf("cgroup v2 check = %+v with euid %d", c, os.Geteuid())
	}
	if c := got["tmpfs room"]; !c.OK || !strings.Contains(c.Detail, "need 1.50 GiB (tmpfs 1.00 GiB + 0.50 GiB headroom)") {
		t.Errorf("tmpfs check = %+v", c)
	}
	if len(r.Checks) != 9 {
		t.Errorf("%d checks, want 9:\n%s", len(r.Checks), r)
	}
	if os.Geteuid() == 0 {
		if err := r.Err(); err != nil {
			t.Errorf("Err = %v, want nil on this machine as root", err)
		}
	}
	t.Logf("\n%s", r)
	for _, c := range Run(Options{}).Checks {
		if c.Name == "kernel wireguard" {
			t.Errorf("a run whose transports state no kernel feature has the check %+v", c)
		}
	}
}

func TestRunTools(t *testing.T) {
	r := Run(Options{Tools: []string{"sh", "twnsbench-no-such-tool"}})
	var sh, missing Check
	for _, c := range r.Checks {
		switch c.Name {
		case "sh":
			sh = c
		case "twnsbench-no-such-tool":
			missing = c
		case "tmpfs room":
			t.Error("tmpfs checked with NeedTmpfsBytes 0")
		}
	}
	// sh is found but has no known version flag: OK, version unknown.
	if !sh.OK || !strings.Contains(sh.Detail, "version unknown: no known read-only version flag") {
		t.Errorf("sh check = %+v", sh)
	}
	if missing.OK || !missing.Required || missing.Fix == "" {
		t.Errorf("missing tool check = %+v", missing)
	}
	if _, ok := r.Versions["sh"]; ok || len(r.Versions) != 0 {
		t.Errorf("Versions = %v, want none", r.Versions)
	}
	if f := r.Failed(); len(f) == 0 || f[len(f)-1].Name != "twnsbench-no-such-tool" {
		t.Errorf("Failed = %+v", f)
	}
}

func TestTmpfsRoom(t *testing.T) {
	const gi, mi = 1 << 30, 1 << 20
	args := []string{"./twnsbench", "run", "--size", "5GiB", "--runs", "3"}
	need := int64(5*gi + 256*mi) // payload and warm-up file
	tests := []struct {
		name        string
		size, avail int64
		want        Check
	}{
		{"enough (this machine)", 5 * gi, 24339828 * 1024, Check{OK: true,
			Detail: "MemAvailable 23.21 GiB, need 5.75 GiB (tmpfs 5.25 GiB + 0.50 GiB headroom)"}},
		{"short: 2.25 GiB less", 5 * gi, 3*gi + gi/2, Check{
			Detail: "MemAvailable 3.50 GiB, need 5.75 GiB (tmpfs 5.25 GiB + 0.50 GiB headroom)",
			Fix:    "./twnsbench run --size 2.7GiB --runs 3"}},
		{"short, size unknown: all of need is payload", need, 3*gi + gi/2, Check{
			Detail: "MemAvailable 3.50 GiB, need 5.75 GiB (tmpfs 5.25 GiB + 0.50 GiB headroom)",
			Fix:    "./twnsbench run --size 3GiB --runs 3"}},
		{"below a GiB", 5 * gi, gi + 256*mi + 300*mi, Check{
			Detail: "MemAvailable 1.54 GiB, need 5.75 GiB (tmpfs 5.25 GiB + 0.50 GiB headroom)",
			Fix:    "./twnsbench run --size 812MiB --runs 3"}},
		{"nothing fits", 5 * gi, 700 * mi, Check{
			Detail: "MemAvailable 0.68 GiB, need 5.75 GiB (tmpfs 5.25 GiB + 0.50 GiB headroom)",
			Fix:    "none: no --size fits; stop what uses the memory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Name, tt.want.Required = "tmpfs room", true
			if got := tmpfsRoom(need, tt.size, tt.avail, args); got != tt.want {
				t.Errorf("tmpfsRoom = %+v\nwant        %+v", got, tt.want)
			}
		})
	}
}
