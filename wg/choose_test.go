package wg

import (
	"errors"
	"runtime/debug"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": Auto, "auto": Auto, "kernel": Kernel, " userspace ": Userspace} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("wireguard-go"); err == nil || !strings.Contains(err.Error(), "want auto, kernel or userspace") {
		t.Errorf("bad mode: %v", err)
	}
}

func TestChoose(t *testing.T) {
	const notSet = "CONFIG_WIREGUARD is not set"
	const builtIn = "built in (CONFIG_WIREGUARD=y)"
	tests := []struct {
		mode     Mode
		has      bool
		how      string
		impl     Impl
		why      string
		fallback string
		noKernel bool
	}{
		{Auto, true, builtIn, ImplKernel, "kernel WireGuard: " + builtIn, "", false},
		{Auto, false, notSet, ImplUserspace, "kernel module unavailable",
			"userspace wireguard-go instead of kernel WireGuard (" + notSet + ")", false},
		{"", false, notSet, ImplUserspace, "kernel module unavailable",
			"userspace wireguard-go instead of kernel WireGuard (" + notSet + ")", false},
		{Kernel, true, builtIn, ImplKernel, "kernel WireGuard: " + builtIn, "", false},
		{Kernel, false, notSet, "", "", "", true},
		// An explicit choice is not a fallback, whatever the kernel has.
		{Userspace, true, builtIn, ImplUserspace, "chosen with --wireguard userspace", "", false},
		{Userspace, false, notSet, ImplUserspace, "chosen with --wireguard userspace", "", false},
	}
	for _, tt := range tests {
		c, err := Choose(tt.mode, tt.has, tt.how)
		if tt.noKernel {
			if !errors.Is(err, ErrNoKernel) {
				t.Errorf("Choose(%q, %v): err %v, want ErrNoKernel", tt.mode, tt.has, err)
			}
			if want := "--wireguard kernel: this kernel has no WireGuard (" + notSet + "); use --wireguard userspace or auto"; err.Error() != want {
				t.Errorf("refusal = %q, want %q", err, want)
			}
			continue
		}
		if err != nil || c.Impl != tt.impl || c.Why != tt.why || c.Fallback != tt.fallback {
			t.Errorf("Choose(%q, %v) = %+v, %v; want %s / %q / %q", tt.mode, tt.has, c, err, tt.impl, tt.why, tt.fallback)
		}
	}
}

func TestDescribe(t *testing.T) {
	auto, _ := Choose(Auto, false, "CONFIG_WIREGUARD is not set")
	user, _ := Choose(Userspace, true, "built in")
	kernel, _ := Choose(Kernel, true, "built in")
	for _, tt := range []struct {
		c          Choice
		kver, gver string
		want       string
	}{
		{kernel, "1.0.0", "v1", "kernel module 1.0.0"},
		{kernel, "", "v1", "kernel module"},
		{auto, "", "v0.0.0-20260522210424-ecfc5a8d5446", "wireguard-go v0.0.0-20260522210424-ecfc5a8d5446 (userspace; kernel module unavailable)"},
		{user, "1.0.0", "v0.0.1", "wireguard-go v0.0.1 (userspace; chosen with --wireguard userspace)"},
	} {
		if got := Describe(tt.c, tt.kver, tt.gver); got != tt.want {
			t.Errorf("Describe(%+v) = %q, want %q", tt.c, got, tt.want)
		}
	}
}

func TestModuleVersion(t *testing.T) {
	bi := &debug.BuildInfo{Deps: []*debug.Module{
		{Path: "golang.org/x/sys", Version: "v0.50.0"},
		{Path: goModule, Version: "v0.0.0-20260522210424-ecfc5a8d5446"},
	}}
	if got := moduleVersion(bi, goModule); got != "v0.0.0-20260522210424-ecfc5a8d5446" {
		t.Errorf("version = %q", got)
	}
	bi.Deps[1].Replace = &debug.Module{Path: "../wireguard-go", Version: "(devel)"}
	if got := moduleVersion(bi, goModule); got != "(devel)" {
		t.Errorf("replaced version = %q, want the replacement's", got)
	}
	if got := moduleVersion(&debug.BuildInfo{}, goModule); got != "(unknown version)" {
		t.Errorf("missing module = %q", got)
	}
}
