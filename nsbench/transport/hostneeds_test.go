package transport

import (
	"reflect"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/preflight"
)

// TestHostNeeds: each transport states its own programs and kernel
// features, nothing else names them: openvpn on the roles it runs in (not
// the relay, which it does not use), the kernel's WireGuard where the mode
// takes it, and nothing for a row built of the harness's programs alone
// or for an openvpn the user named by path.
func TestHostNeeds(t *testing.T) {
	build := func(names []string, values map[string]string) []Transport {
		t.Helper()
		ts, err := Build(names, values)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	ts := build([]string{"ssh", "openvpn-static", "openvpn-tls", "wireguard", "wireguard-kernel", "wireguard-go", "tw"}, nil)
	wantPrograms := map[string][]preflight.Tool{"client": {ovpnTool}, "server": {ovpnTool}}
	if got := ProgramsByRole(ts); !reflect.DeepEqual(got, wantPrograms) {
		t.Errorf("programs by role %+v, want %+v", got, wantPrograms)
	}
	wantKernel := []preflight.KernelUse{
		{Check: "kernel wireguard", Feature: "wireguard", Without: "userspace wireguard-go will be used"},
		{Check: "kernel wireguard", Feature: "wireguard", Without: "wireguard-kernel cannot run"},
	}
	if got := KernelUses(ts); !reflect.DeepEqual(got, wantKernel) {
		t.Errorf("kernel uses %+v, want %+v", got, wantKernel)
	}
	named := build([]string{"openvpn-static"}, map[string]string{"openvpn": "/opt/openvpn/sbin/openvpn"})
	if got := ProgramsByRole(named); len(got) != 0 {
		t.Errorf("with --openvpn a path: programs %+v, want none (the host's openvpn is not the one run)", got)
	}
}
