package topology

import (
	"net"
	"net/netip"
	"testing"
)

// What counts as a claim on the probed address: an ARP reply or request
// whose sender is that address, from any MAC but the probing link's own;
// never the probe itself (sender 0.0.0.0) or another address's traffic.
func TestARPClaims(t *testing.T) {
	ours, _ := net.ParseMAC("02:00:00:00:00:01")
	theirs, _ := net.ParseMAC("02:00:00:00:00:02")
	a, other := netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("10.0.0.6")
	for _, tc := range []struct {
		name string
		p    []byte
		want bool
	}{
		{"a reply from the holder", arpPacket(arpReply, theirs, a, netip.IPv4Unspecified()), true},
		{"the holder's own request", arpPacket(arpRequest, theirs, a, other), true},
		{"our own probe", arpPacket(arpRequest, ours, netip.IPv4Unspecified(), a), false},
		{"another's probe", arpPacket(arpRequest, theirs, netip.IPv4Unspecified(), a), false},
		{"another address's reply", arpPacket(arpReply, theirs, other, a), false},
		{"a reply sent by our own MAC", arpPacket(arpReply, ours, a, a), false},
		{"truncated", arpPacket(arpReply, theirs, a, a)[:20], false},
	} {
		by, got := claims(tc.p, a, ours)
		if got != tc.want || got && by.String() != theirs.String() {
			t.Errorf("%s: claims = %v by %v, want %v", tc.name, got, by, tc.want)
		}
	}
}
