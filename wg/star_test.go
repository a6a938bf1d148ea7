package wg

import (
	"net/netip"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// A server of many clients replaces its peer list with every client, each
// routed its own one address.
func TestConfigManyPeers(t *testing.T) {
	var peers []Peer
	for i := 2; i <= 4; i++ {
		k, err := wgtypes.GeneratePrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, Peer{PublicKey: k.PublicKey(), AllowedIP: netip.AddrFrom4([4]byte{10, 99, 0, byte(i)})})
	}
	c := Config{ListenPort: 51820, Peer: peers[0], More: peers[1:]}.wgtypes()
	if !c.ReplacePeers || len(c.Peers) != 3 {
		t.Fatalf("wgtypes: ReplacePeers %v, %d peers; want true, 3", c.ReplacePeers, len(c.Peers))
	}
	for i, p := range c.Peers {
		if p.PublicKey != peers[i].PublicKey || len(p.AllowedIPs) != 1 || p.AllowedIPs[0].String() != peers[i].AllowedIP.String()+"/32" {
			t.Errorf("peer %d: %v %v, want %v %v/32", i, p.PublicKey, p.AllowedIPs, peers[i].PublicKey, peers[i].AllowedIP)
		}
		if p.Endpoint != nil || p.PersistentKeepaliveInterval != nil {
			t.Errorf("peer %d: a server's client has no endpoint nor keepalive, got %v %v", i, p.Endpoint, p.PersistentKeepaliveInterval)
		}
	}
}
