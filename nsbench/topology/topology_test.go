package topology_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

func TestMain(m *testing.M) { nstest.Main(m) }

func TestSpecValidate(t *testing.T) {
	good := topology.DefaultSpec("twnsb-abc123")
	if err := good.Validate(); err != nil {
		t.Fatalf("default spec: %v", err)
	}
	if got := good.Addr(topology.Server).String(); got != "10.77.0.4" {
		t.Errorf("server address = %s, want 10.77.0.4", got)
	}
	if got := good.NetnsName(topology.Client); got != "twnsb-abc123-client" {
		t.Errorf("netns name = %s", got)
	}
	bad := good
	bad.Prefix = "mine"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "must start with") {
		t.Errorf("foreign prefix accepted: %v", err)
	}
	bad = good
	bad.HostNames = map[string]string{"x": "nowhere"}
	if err := bad.Validate(); err == nil {
		t.Error("host name for unknown role accepted")
	}
}

func TestUpDown(t *testing.T) {
	nstest.RequireRoot(t)
	spec := topology.DefaultSpec(nstest.Prefix(t))
	topo, err := topology.Up(spec)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Cleanup(func() { topo.Down() })

	if topo.Congestion != "cubic" {
		t.Errorf("congestion = %q, want cubic", topo.Congestion)
	}
	for _, role := range topology.DefaultRoles {
		r := topo.Roles[role]
		h, err := r.NS.Netlink()
		if err != nil {
			t.Fatal(err)
		}
		l, err := h.LinkByName(topology.RoleLink)
		h.Close()
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		if got := l.Attrs().GSOMaxSegs; got != 1 {
			t.Errorf("%s: gso_max_segs = %d, want 1", role, got)
		}
		if l.Attrs().OperState != netlink.OperUp {
			t.Errorf("%s: %s is %v, want up", role, topology.RoleLink, l.Attrs().OperState)
		}
		err = r.NS.Do(func() error {
			e, err := ethtool.NewEthtool()
			if err != nil {
				return err
			}
			defer e.Close()
			f, err := e.Features(topology.RoleLink)
			if err != nil {
				return err
			}
			for _, k := range []string{"tx-tcp-segmentation", "tx-generic-segmentation", "rx-gro"} {
				if f[k] {
					t.Errorf("%s: %s still on", role, k)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		hosts, err := os.ReadFile(topo.HostsFile(role))
		if err != nil || !strings.Contains(string(hosts), "10.77.0.3\trelay relay.tw.test") {
			t.Errorf("%s hosts file: %v %q", role, err, hosts)
		}
	}

	// A byte crosses from server to client over the bridge, and the client's
	// rx counter sees it.
	srv := topo.Roles[topology.Server]
	var ln net.Listener
	if err := srv.NS.Do(func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(srv.Addr.String(), "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte("x"))
			c.Close()
		}
	}()
	before, err := topo.RxBytes(topology.Client)
	if err != nil {
		t.Fatal(err)
	}
	var buf [1]byte
	err = topo.Roles[topology.Client].NS.Do(func() error {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Read(buf[:])
		return err
	})
	if err != nil || buf[0] != 'x' {
		t.Fatalf("client → server: %v %q", err, buf)
	}
	after, err := topo.RxBytes(topology.Client)
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("client rx bytes did not grow: %d → %d", before, after)
	}

	// The host namespace never sees the run's links.
	hostLinks, _ := netlink.LinkList()
	for _, l := range hostLinks {
		if strings.HasPrefix(l.Attrs().Name, "twnsb") || l.Attrs().Name == "br0" {
			t.Errorf("link %s in the host namespace", l.Attrs().Name)
		}
	}

	if err := topo.Down(); err != nil {
		t.Fatalf("down: %v", err)
	}
	if err := topo.Down(); err != nil {
		t.Fatalf("second down: %v", err)
	}
	if left := nstest.Residue(spec.Prefix); len(left) > 0 {
		t.Errorf("left after down: %v", left)
	}
	if _, err := os.Stat(filepath.Join(ns.RunDir, spec.NetnsName("client"))); !os.IsNotExist(err) {
		t.Errorf("client netns still mounted: %v", err)
	}
}

// TestUpOwnNIC (--nic own): the role links keep the kernel's offloads and
// gso_max_segs, and the topology records what they hold.
func TestUpOwnNIC(t *testing.T) {
	nstest.RequireRoot(t)
	spec := topology.DefaultSpec(nstest.Prefix(t))
	spec.Roles = []string{topology.Client, topology.Server}
	spec.HostNames = nil
	spec.Offloads, spec.GSOMaxSegs = true, 0
	topo, err := topology.Up(spec)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Cleanup(func() { topo.Down() })
	var state string
	var segs int
	err = topo.Roles[topology.Client].NS.Do(func() (err error) {
		l, err := netlink.LinkByName(topology.RoleLink)
		if err != nil {
			return err
		}
		segs = int(l.Attrs().GSOMaxSegs)
		state, err = topology.OffloadsState(topology.RoleLink)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if segs <= 1 {
		t.Errorf("gso_max_segs = %d, want the kernel's own (above 1)", segs)
	}
	if state != "tso/gso/gro on" && !strings.HasPrefix(state, "tso, gso on") { // a veth's gro is off until XDP or asked
		t.Errorf("a veth's own offloads read %q, want tso and gso on", state)
	}
	if want := "the interfaces' own settings (" + state; !strings.HasPrefix(topo.Offloads, want) {
		t.Errorf("recorded offloads %q, want it to start %q", topo.Offloads, want)
	}
}

// Every namespace a run makes has IPv6 off from its birth: conf/all,
// conf/default (a link made later, such as a tunnel's) and each link but
// loopback, and no IPv6 address but loopback's ::1.
func TestRunNamespacesHaveNoIPv6(t *testing.T) {
	nstest.RequireRoot(t)
	topo, err := topology.Up(topology.DefaultSpec(nstest.Prefix(t)))
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Cleanup(func() { topo.Down() })
	checkNoIPv6(t, topo.Switch)
	for _, role := range topology.DefaultRoles {
		checkNoIPv6(t, topo.Roles[role].NS)
	}
}

// checkNoIPv6 fails t unless n has disable_ipv6 1 in conf/all,
// conf/default and on each of its links but lo (at least one more), and no
// IPv6 address but ::1.
func checkNoIPv6(t *testing.T, n *ns.NS) {
	t.Helper()
	err := n.Do(func() error {
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		confs := []string{"all", "default"}
		for _, l := range links {
			confs = append(confs, l.Attrs().Name)
		}
		if len(confs) < 4 {
			t.Errorf("%s: links %v, want lo and another", n.Name, confs[2:])
		}
		for _, c := range confs {
			b, err := os.ReadFile(filepath.Join("/proc/sys/net/ipv6/conf", c, "disable_ipv6"))
			if err != nil {
				return err
			}
			want := "1"
			if c == "lo" {
				want = "0"
			}
			if v := strings.TrimSpace(string(b)); v != want {
				t.Errorf("%s: conf/%s/disable_ipv6 = %s, want %s", n.Name, c, v, want)
			}
		}
		addrs, err := netlink.AddrList(nil, netlink.FAMILY_V6)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if !a.IP.Equal(net.IPv6loopback) {
				t.Errorf("%s: IPv6 address %v, want none but ::1", n.Name, a)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
}
