package transport

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestIPsecOpsCrossAsJSON: what the IPsec paths send to a role's ops (the
// SAs with their keys, the policies' directions, the inner route, a
// daemon's directory) and what comes back (the SAs held) arrive as sent.
func TestIPsecOpsCrossAsJSON(t *testing.T) {
	a := espAlgos["aes-cbc-128-sha256"]
	k, err := a.newKeys()
	if err != nil {
		t.Fatal(err)
	}
	cli, srv := netip.MustParseAddr("10.77.0.2"), netip.MustParseAddr("10.77.0.4")
	for _, v := range []any{
		xfrmAdd{Variant: "aes-cbc-128-sha256", Mode: netlink.XFRM_MODE_TUNNEL,
			SAs:      []xfrmSA{{From: "client", To: "server", Src: cli, Dst: srv, SPI: 0x7fffffff, Keys: k}},
			Policies: []xfrmPolicy{{Dir: netlink.XFRM_DIR_FWD, Src: ipsecServer, Dst: ipsecClient, TmplSrc: srv, TmplDst: cli}}},
		innerRoute{Peer: ipsecServer, Via: srv, Src: ipsecClient, Remove: true},
		[]xfrmHeld{{Transform: "cbc(aes) 128-bit + hmac(sha256)-128", Mode: netlink.XFRM_MODE_TRANSPORT, Bytes: 1 << 40}},
		confDir{Remove: []string{"/r"}, Dirs: []string{"/d"}, Files: []confFile{{Path: "/f", Data: []byte{0, 0xff}}}},
	} {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		back := reflect.New(reflect.TypeOf(v))
		if err := json.Unmarshal(raw, back.Interface()); err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if got := back.Elem().Interface(); !reflect.DeepEqual(got, v) {
			t.Errorf("%T: sent %+v, arrived %+v", v, v, got)
		}
	}
}
