package topology_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// linkChildEnv carries a LinkSpec to TestUpOnLinkChild, which builds it
// from inside a "machine" (a namespace standing for another host).
const linkChildEnv = "TWNSBENCH_TEST_LINKSPEC"

// TestUpOnLinkChild is not a test of its own: TestUpOnLink runs it inside
// a machine's namespace, where UpOnLink sees that machine's interfaces.
func TestUpOnLinkChild(t *testing.T) {
	raw := os.Getenv(linkChildEnv)
	if raw == "" {
		t.Skip("run by TestUpOnLink inside a machine's namespace")
	}
	var s topology.LinkSpec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	if _, err := topology.UpOnLink(s); err != nil {
		t.Fatal(err)
	}
}

// Two machines joined by a cable (a veth pair); a role's namespace on
// each, joined to the machine's interface by macvlan: the roles reach each
// other by address and name, the machines' own links are as they were,
// and Down on one machine removes only its role.
func TestUpOnLink(t *testing.T) {
	prefix := nstest.Prefix(t)
	ms := nstest.Machines(t, prefix, netip.MustParsePrefix("10.250.7.0/24"))
	machines := map[string]*ns.NS{"ma": ms[0].NS, "mb": ms[1].NS}
	peers := map[string]netip.Addr{topology.Client: netip.MustParseAddr("10.250.7.11"), topology.Server: netip.MustParseAddr("10.250.7.12")}
	where := map[string]string{topology.Client: "ma", topology.Server: "mb"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	self, _ := os.Executable()
	spec := topology.DefaultSpec(prefix)
	spec.HostNames = map[string]string{"bench.test": topology.Server} // no relay in this run
	// A machine's namespace cannot extend the global allowed list, as a
	// real host's init namespace can: inherit the host's algorithm.
	spec.Congestion = ""
	for _, role := range []string{topology.Client, topology.Server} {
		s := topology.LinkSpec{Spec: spec, Role: role, Parent: "nic", Addr: netip.PrefixFrom(peers[role], 24), Peers: peers}
		s.Edge = role == topology.Server // behind an edge, as for a WAN run
		raw, _ := json.Marshal(s)
		res, err := proc.Run(ctx, proc.Program{Name: where[role] + "/uponlink", NetNS: machines[where[role]].Path(),
			Argv: []string{self, "-test.run=^TestUpOnLinkChild$", "-test.v"}, HostMounts: true, Env: []string{linkChildEnv + "=" + string(raw)}})
		if err != nil || !strings.Contains(string(res.Stdout), "--- PASS: TestUpOnLinkChild") {
			t.Fatalf("%s on %s: %v\n%s%s", role, where[role], err, res.Stdout, res.Stderr)
		}
	}
	t.Cleanup(func() { topology.Clean(prefix) })

	// The client reaches the server across the cable, by name.
	ping := func(wait string) (proc.Result, error) {
		return proc.Run(ctx, proc.Program{Name: "client/ping", NetNS: ns.RunDir + "/" + spec.NetnsName(topology.Client),
			Argv:   []string{"ping", "-c", "1", "-W", wait, "bench.test"},
			Mounts: []ns.Mount{{Kind: "bind", Source: "/etc/netns/" + spec.NetnsName(topology.Client) + "/hosts", Target: "/etc/hosts"}}})
	}
	res, err := ping("5")
	if err != nil || !strings.Contains(string(res.Stdout), "10.250.7.12") {
		t.Errorf("client ping server: %v\n%s%s", err, res.Stdout, res.Stderr)
	}
	// The server stands behind its edge: the pipe carries its frames, and
	// without it nothing does.
	srv, err := ns.Open(spec.NetnsName(topology.Server))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if names := linkNames(srv); strings.Join(names, ",") != "eth0,lo,wan0,wire0" {
		t.Errorf("server's links behind its edge: %v", names)
	}
	cli, err := ns.Open(spec.NetnsName(topology.Client))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	checkNoIPv6(t, cli)
	checkNoIPv6(t, srv)
	if err := srv.Do(topology.SplitPipe); err != nil {
		t.Fatal(err)
	}
	if res, err := ping("1"); err == nil {
		t.Errorf("client reached the server with its pipe split:\n%s", res.Stdout)
	}
	if err := srv.Do(topology.JoinPipe); err != nil {
		t.Fatal(err)
	}
	if res, err := ping("5"); err != nil {
		t.Errorf("client ping server through the joined pipe: %v\n%s%s", err, res.Stdout, res.Stderr)
	}
	// The machines hold their own links only: the role's child lives in
	// the role's namespace.
	for m, n := range machines {
		if names := linkNames(n); strings.Join(names, ",") != "lo,nic" {
			t.Errorf("machine %s links: %v", m, names)
		}
	}
	// Down of one machine's role removes that role only.
	if err := errors.Join(topology.Clean(spec.NetnsName(topology.Client))...); err != nil {
		t.Fatal(err)
	}
	left, _ := ns.List(prefix)
	if strings.Join(left, ",") != strings.Join([]string{prefix + "-ma", prefix + "-mb", spec.NetnsName(topology.Server), prefix + "-sw"}, ",") {
		t.Errorf("after the client's clean: %v", left)
	}
}

// linkNames lists n's links by name, sorted.
func linkNames(n *ns.NS) []string {
	var names []string
	n.Do(func() error {
		links, err := netlink.LinkList()
		for _, l := range links {
			names = append(names, l.Attrs().Name)
		}
		return err
	})
	slices.Sort(names)
	return names
}

// An edge refuses an ipvlan child (it delivers by IP address, and wire0
// has none) before anything is built; a macvlan one passes that check.
func TestLinkSpecEdgeNeedsMacvlan(t *testing.T) {
	addr := netip.MustParsePrefix("10.250.9.11/24")
	s := topology.LinkSpec{Spec: topology.DefaultSpec("twnsb-0edge0"), Role: topology.Client, Parent: "hx-none",
		Addr: addr, Peers: map[string]netip.Addr{topology.Client: addr.Addr()}, Edge: true, Mode: topology.IPvlan}
	s.Spec.HostNames = nil // no relay among the peers
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "needs a macvlan child") {
		t.Errorf("ipvlan edge: %v, want the refusal", err)
	}
	s.Mode = topology.Macvlan
	if err := s.Validate(); err == nil || strings.Contains(err.Error(), "needs a macvlan child") || !strings.Contains(err.Error(), "hx-none") {
		t.Errorf("macvlan edge: %v, want only the missing parent's error", err)
	}
}
