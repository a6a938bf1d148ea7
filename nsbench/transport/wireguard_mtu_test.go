package transport_test

import (
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// --wireguard-mtu is one flag for every WireGuard row: each row's
// transport carries its value, and a value out of range is bad input.
func TestWireGuardMTUOption(t *testing.T) {
	for _, name := range []string{"wireguard", "wireguard-kernel", "wireguard-go"} {
		spec, ok := transport.Lookup(name)
		if !ok {
			t.Fatalf("%s is not registered", name)
		}
		opts := map[string]string{"wireguard": "userspace", "wireguard-go": ""}
		for _, tc := range []struct {
			value string
			mtu   int
			bad   bool
		}{
			{"1220", 1220, false},
			{"", 0, false},
			{"1440", 1440, false},
			{"1441", 0, true},
			{"575", 0, true},
			{"12x0", 0, true},
		} {
			opts["wireguard-mtu"] = tc.value
			tr, err := spec.New(transport.Config{Options: opts})
			if (err != nil) != tc.bad {
				t.Errorf("%s --wireguard-mtu %q: error %v, want bad input %v", name, tc.value, err, tc.bad)
				continue
			}
			if tc.bad {
				continue
			}
			if w, ok := tr.(*transport.WireGuard); !ok || w.MTU != tc.mtu {
				t.Errorf("%s --wireguard-mtu %q: transport %#v, want a WireGuard of MTU %d", name, tc.value, tr, tc.mtu)
			}
		}
	}
	var n int
	for _, o := range transport.Options() {
		if o.Name == "wireguard-mtu" {
			n++
			if o.Value != "1420" {
				t.Errorf("--wireguard-mtu defaults to %q, want 1420 (WireGuard's own)", o.Value)
			}
		}
	}
	if n != 1 {
		t.Errorf("--wireguard-mtu is offered %d times, want once for the three rows", n)
	}
}
