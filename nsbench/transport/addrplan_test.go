package transport

import (
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// TestAddressPlan: no two transports' inner ranges overlap, none overlaps
// the testbed's network, and each transport's ends are the .1 and .2 of
// its own range.
func TestAddressPlan(t *testing.T) {
	testbed := topology.DefaultSpec(topology.Prefix + "000000").Subnet
	for i, a := range addressPlan {
		if a.prefix.Overlaps(testbed) {
			t.Errorf("%s's %s overlaps the testbed's %s", a.owner, a.prefix, testbed)
		}
		for _, b := range addressPlan[i+1:] {
			if a.prefix.Overlaps(b.prefix) {
				t.Errorf("%s's %s overlaps %s's %s", a.owner, a.prefix, b.owner, b.prefix)
			}
		}
	}
	for name, got := range map[string]string{
		"ipsec":      ipsecServer.String() + " " + ipsecClient.String(),
		"libreswan":  lsServer.String() + " " + lsClient.String(),
		"strongswan": ssServer.String() + " " + ssClient.String(),
		"openvpn":    ovpnServer.String() + " " + ovpnClient.String(),
		"ssh-tun":    sshTunServer.String() + " " + sshTunClient.String(),
		"wireguard":  WireGuardServerAddr.String() + " " + WireGuardClientAddr.String(),
		"sshuttle":   sshuttleTarget.String(),
	} {
		want := map[string]string{
			"ipsec": "10.92.0.1 10.92.0.2", "libreswan": "10.91.0.1 10.91.0.2", "strongswan": "10.93.0.1 10.93.0.2",
			"openvpn": "10.97.0.1 10.97.0.2", "ssh-tun": "10.98.0.1 10.98.0.2", "wireguard": "10.99.0.1/24 10.99.0.2/24",
			"sshuttle": "10.94.0.1",
		}[name]
		if got != want {
			t.Errorf("%s's inner addresses %s, want %s", name, got, want)
		}
	}
}
