package transport

import (
	"context"
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/topology"
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

// TestIPsecOpsInRoles (root): in a real testbed, tunnel mode's inner
// address and route and a side's policies go into the role's namespace
// through the ops, the SAs read back there (none: no SA was added, which
// this host's kernel without ESP could not), and close takes everything
// away again.
func TestIPsecOpsInRoles(t *testing.T) {
	_, _, roles := nstest.Roles(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, srv := roles[topology.Client], roles[topology.Server]
	u := &ipsecUp{tb: &Testbed{Roles: roles}}
	defer u.close()
	ip := func(args ...string) string {
		t.Helper()
		res, err := cli.Run(ctx, "ip", args...)
		if err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, res.Stderr)
		}
		return string(res.Stdout)
	}
	if err := u.addInner(ctx, topology.Client, ipsecClient, ipsecServer, srv.Addr()); err != nil {
		t.Fatal(err)
	}
	u.xfrm = append(u.xfrm, topology.Client)
	add := xfrmAdd{Variant: "aes-gcm-128", Mode: netlink.XFRM_MODE_TUNNEL, Policies: []xfrmPolicy{
		{Dir: netlink.XFRM_DIR_OUT, Src: ipsecClient, Dst: ipsecServer, TmplSrc: cli.Addr(), TmplDst: srv.Addr()},
		{Dir: netlink.XFRM_DIR_IN, Src: ipsecServer, Dst: ipsecClient, TmplSrc: srv.Addr(), TmplDst: cli.Addr()},
	}}
	if _, err := xfrmAddOp.On(ctx, cli, add); err != nil {
		t.Fatal(err)
	}
	route := ip("-4", "route", "show", ipsecServer.String()+"/32")
	if want := "via " + srv.Addr().String(); !strings.Contains(route, want) || !strings.Contains(route, "src "+ipsecClient.String()) {
		t.Errorf("route %q: want %s, src %s", route, want, ipsecClient)
	}
	if lo := ip("-4", "addr", "show", "dev", "lo"); !strings.Contains(lo, ipsecClient.String()+"/32") {
		t.Errorf("lo %q lacks %s/32", lo, ipsecClient)
	}
	pol := ip("xfrm", "policy")
	for _, want := range []string{"src " + ipsecClient.String() + "/32 dst " + ipsecServer.String() + "/32", "dir out", "dir in", "proto esp reqid 692 mode tunnel"} {
		if !strings.Contains(pol, want) {
			t.Errorf("xfrm policy %q lacks %q", pol, want)
		}
	}
	if pol := func() string { res, _ := srv.Run(ctx, "ip", "xfrm", "policy"); return string(res.Stdout) }(); pol != "" {
		t.Errorf("the server holds policies %q: the op ran outside the client", pol)
	}
	if held, err := xfrmStates(ctx, cli); err != nil || len(held) != 0 {
		t.Errorf("SAs %+v, %v: want none", held, err)
	}
	if _, err := espBytes(cli)(); err == nil || !strings.Contains(err.Error(), "no SA in the client's namespace") {
		t.Errorf("bytes without SAs: %v", err)
	}
	if err := u.close(); err != nil {
		t.Fatal(err)
	}
	if pol, lo, route := ip("xfrm", "policy"), ip("-4", "addr", "show", "dev", "lo"), ip("-4", "route", "show", ipsecServer.String()+"/32"); pol != "" || route != "" || strings.Contains(lo, ipsecClient.String()) {
		t.Errorf("after close: policies %q, route %q, lo %q: want none", pol, route, lo)
	}
}
