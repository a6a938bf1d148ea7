package transport_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/twnsbench/twnsbench/wg"
)

// TestNarrowBlackHoleByHand checks the forwarder's narrow hop against a
// black hole made by hand in the same namespaces: the switch's ports at
// MTU 1280 (a frame longer is dropped silently by the veth), segmentation
// offloads off in the roles (a GSO frame would pass a veth whatever its
// MTU) and nftables in the client and the server dropping ICMP
// "fragmentation needed". For Pure SSH (its iperf3 runs on the plain path)
// and WireGuard (wireguard-go), a 3 s iperf3 through the path must stall
// (under 1 MiB) by hand exactly when it stalls under mtu=1280:icmp=drop;
// mtu=1280 with its ICMP is logged beside them. About a minute, so only
// when asked:
//
//	TWNSB_MEASURE=1 go test -run TestNarrowBlackHoleByHand -v ./nsbench/transport/
func TestNarrowBlackHoleByHand(t *testing.T) {
	nstest.RequireRoot(t)
	if os.Getenv("TWNSB_MEASURE") == "" {
		t.Skip("a measurement: set TWNSB_MEASURE=1 to run it")
	}
	for _, tc := range []struct {
		name string
		tr   transport.Transport
	}{{"ssh", transport.SSH{}}, {"wireguard-go", &transport.WireGuard{Mode: wg.Userspace}}} {
		got := map[string]int64{}
		for _, how := range []string{"mtu=1280", "mtu=1280:icmp=drop", "by hand"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				got[how] = bulkThrough(t, tc.tr, how)
			})
		}
		stalled := func(how string) bool { return got[how] < 1<<20 }
		t.Logf("%s: received %d B with mtu=1280, %d B with mtu=1280:icmp=drop, %d B by hand", tc.name,
			got["mtu=1280"], got["mtu=1280:icmp=drop"], got["by hand"])
		if stalled("by hand") != stalled("mtu=1280:icmp=drop") {
			t.Errorf("%s: stalled by hand %v, under the forwarder's black hole %v", tc.name, stalled("by hand"), stalled("mtu=1280:icmp=drop"))
		}
	}
}

// bulkThrough makes the narrow path how says in fresh namespaces, brings
// tr up through it and returns the bytes a 3 s iperf3 delivered (0 when it
// gave no result within its bound).
func bulkThrough(t *testing.T, tr transport.Transport, how string) int64 {
	e, topo := envTopo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if how == "by hand" {
		blackHoleByHand(t, topo)
	} else {
		dir := t.TempDir()
		u := impair.NewUserspace(impair.UserspaceConfig{Switch: topo.Switch, Control: filepath.Join(dir, "impair.sock"),
			Ports: []impair.Port{{Name: "client", Role: "client", Impaired: true}, {Name: "relay", Role: "relay"},
				{Name: "server", Role: "server", Impaired: true}},
			Process: proc.Program{Name: "switch/impair-forwarder", NetNS: topo.Switch.Path(), Log: filepath.Join(dir, "forwarder.log")}})
		t.Cleanup(func() { u.Clear(context.Background()) })
		hop := impair.NarrowHop{MTU: 1280, DropICMP: how == "mtu=1280:icmp=drop"}
		if _, err := u.Set(ctx, impair.Condition{Narrow: hop, Seed: 1}); err != nil {
			t.Fatal(err)
		}
		defer func() {
			n, err := u.Narrow(ctx)
			t.Logf("%s: the hop's counts %+v (%v)", how, n, err)
		}()
	}
	p, err := tr.Up(ctx, e)
	if err != nil {
		t.Logf("%s: up: %v (a path that cannot come up through it stalled)", how, err)
		return 0
	}
	defer p.Close()
	bctx, bcancel := context.WithTimeout(ctx, 15*time.Second)
	defer bcancel()
	res, err := e.Roles[topology.Client].Run(bctx, "iperf3", "-c", p.Target.Host, "-p", strconv.Itoa(p.Target.Port(transport.ServiceIPerf3)),
		"-t", "3", "-J", "--connect-timeout", "3000")
	var out struct {
		End struct {
			SumReceived struct {
				Bytes int64 `json:"bytes"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if jerr := json.Unmarshal(res.Stdout, &out); err != nil || jerr != nil {
		t.Logf("%s: iperf3: %v %v", how, err, jerr)
		return 0
	}
	return out.End.SumReceived.Bytes
}

// blackHoleByHand sets the switch's ports to MTU 1280, turns the roles'
// segmentation offloads off and drops ICMP "fragmentation needed" in the
// client and the server.
func blackHoleByHand(t *testing.T, topo *topology.Topology) {
	run := func(ns string, argv ...string) {
		if out, err := exec.Command("nsenter", append([]string{"--net=" + ns}, argv...)...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", argv, err, out)
		}
	}
	for _, port := range []string{"client", "relay", "server"} {
		run(topo.Switch.Path(), "ip", "link", "set", port, "mtu", "1280")
	}
	for _, name := range []string{topology.Client, topology.Relay, topology.Server} {
		ns := topo.Roles[name].NS.Path()
		run(ns, "ethtool", "-K", topology.RoleLink, "tso", "off", "gso", "off", "gro", "off")
		if name != topology.Relay {
			run(ns, "nft", "add table inet hx-narrow; add chain inet hx-narrow in { type filter hook input priority 0; }; "+
				"add rule inet hx-narrow in icmp type destination-unreachable icmp code frag-needed drop")
		}
	}
}
