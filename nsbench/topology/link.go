package topology

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
)

// Link modes: how a role's namespace joins its host's interface.
const (
	// Macvlan gives the role's link a MAC of its own, bridged on the
	// parent: the role is a host of its own on the network.
	Macvlan = "macvlan"
	// IPvlan (L2) shares the parent's MAC: for networks that drop frames
	// from MACs they did not assign (clouds, Wi-Fi).
	IPvlan = "ipvlan"
)

// LinkSpec is one role of a run whose roles live on separate hosts: its
// namespace, joined to the host's own interface by a macvlan or ipvlan
// child born inside the namespace. The host keeps its links, addresses,
// routes, qdiscs and sysctls as they were: the child lives and dies with
// the namespace. The namespace is fenced (fence.go): only the peers reach
// the role, over IPv4.
type LinkSpec struct {
	// Spec carries what a run sets on every role link (Prefix, MTU,
	// GSOMaxSegs, Offloads, Congestion, HostNames); Roles is ignored.
	Spec   Spec
	Role   string
	Parent string       // the host's interface
	Mode   string       // Macvlan (default) or IPvlan
	Addr   netip.Prefix // the role's address on that network and its length
	// Peers are every role's address on the network, this one's included,
	// for the namespace's hosts file.
	Peers map[string]netip.Addr
	// HostsFile is where that hosts file goes; "" is /etc/netns/<netns>/hosts
	// (a host whose /etc is read-only takes one in the run's directory).
	HostsFile string
	// Edge puts the child behind an edge (edge.go): eth0 becomes a veth
	// joined to the child by a pipe that the userspace impairment can
	// replace, for a run with a WAN condition.
	Edge bool
}

// Validate checks the spec against this host without changing anything.
func (s LinkSpec) Validate() error {
	spec := s.Spec
	spec.Roles = nil // the run's roles, its host names' targets
	for r := range s.Peers {
		spec.Roles = append(spec.Roles, r)
	}
	if !contains(spec.Roles, s.Role) {
		return fmt.Errorf("%s: no address among the peers", s.Role)
	}
	spec.Subnet = s.Addr.Masked()
	if err := spec.Validate(); err != nil {
		return err
	}
	if s.Mode != "" && s.Mode != Macvlan && s.Mode != IPvlan {
		return fmt.Errorf("%s: link mode %q: use %s or %s", s.Role, s.Mode, Macvlan, IPvlan)
	}
	if s.Edge && s.Mode == IPvlan {
		return fmt.Errorf("%s: an edge (a WAN across hosts) needs a macvlan child: an ipvlan child delivers by IP address, and wire0 has none", s.Role)
	}
	if !s.Addr.Addr().Is4() || s.Addr.Bits() == 32 || s.Addr.Bits() < 8 {
		return fmt.Errorf("%s: address %s: need an IPv4 address with its network length (10.0.0.11/24)", s.Role, s.Addr)
	}
	if a := s.Peers[s.Role]; a != s.Addr.Addr() {
		return fmt.Errorf("%s: peers give it %s, its spec %s", s.Role, a, s.Addr.Addr())
	}
	parent, err := netlink.LinkByName(s.Parent)
	if err != nil {
		return fmt.Errorf("%s: interface %q: %w", s.Role, s.Parent, err)
	}
	// The child cannot hear its parent: the probe would miss the host's
	// own addresses.
	own, err := netlink.AddrList(parent, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("%s: addresses of %s: %w", s.Role, s.Parent, err)
	}
	for _, a := range own {
		if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == s.Addr.Addr() {
			return fmt.Errorf("%s: addr %s is this host's own address on %s: give the role a free address", s.Role, s.Addr.Addr(), s.Parent)
		}
	}
	return nil
}

// UpOnLink builds one role's namespace joined to the host's interface. On
// failure it removes whatever it had built.
func UpOnLink(s LinkSpec) (t *Topology, err error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	spec := s.Spec
	spec.Roles = []string{s.Role}
	spec.Subnet = s.Addr.Masked()
	t = &Topology{Spec: spec, Roles: map[string]*Role{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Down())
			t = nil
		}
	}()
	parent, err := netlink.LinkByName(s.Parent)
	if err != nil {
		return t, fmt.Errorf("%s: interface %s: %w", s.Role, s.Parent, err)
	}
	n, err := NewNS(spec.NetnsName(s.Role))
	if err != nil {
		return t, err
	}
	r := &Role{Name: s.Role, NS: n, Addr: s.Addr.Addr()}
	t.Roles[s.Role] = r
	if r.nl, err = n.Netlink(); err != nil {
		return t, err
	}
	// Fenced before it holds a link: no moment when the LAN reaches the
	// role, on any link the namespace gets.
	if err := fence(n, slices.Collect(maps.Values(s.Peers))); err != nil {
		return t, fmt.Errorf("%s: %w", s.Role, err)
	}
	// Born in the role's namespace: no name appears in the host's.
	name := RoleLink
	if s.Edge {
		name = WireLink
	}
	attrs := netlink.LinkAttrs{Name: name, ParentIndex: parent.Attrs().Index, Namespace: netlink.NsFd(n.FD()), MTU: spec.MTU}
	var child netlink.Link = &netlink.Macvlan{LinkAttrs: attrs, Mode: netlink.MACVLAN_MODE_BRIDGE}
	if s.Mode == IPvlan {
		child = &netlink.IPVlan{LinkAttrs: attrs, Mode: netlink.IPVLAN_MODE_L2}
	}
	if err := netlink.LinkAdd(child); err != nil {
		return t, fmt.Errorf("%s: create %s on %s: %w", s.Role, modeName(s.Mode), s.Parent, err)
	}
	if s.Edge {
		if err := buildEdge(r, spec.MTU); err != nil {
			return t, fmt.Errorf("%s: %w", s.Role, err)
		}
	}
	lo, err := r.nl.LinkByName("lo")
	if err != nil {
		return t, fmt.Errorf("%s: find lo: %w", s.Role, err)
	}
	if err := r.nl.LinkSetUp(lo); err != nil {
		return t, fmt.Errorf("%s: bring up lo: %w", s.Role, err)
	}
	link, err := r.nl.LinkByName(RoleLink)
	if err != nil {
		return t, fmt.Errorf("%s: find %s: %w", s.Role, RoleLink, err)
	}
	if err := t.capGSO(r.nl, link); err != nil {
		return t, fmt.Errorf("%s: %w", s.Role, err)
	}
	if err := r.nl.LinkSetUp(link); err != nil {
		return t, fmt.Errorf("%s: bring up %s: %w", s.Role, RoleLink, err)
	}
	// Up, but without its address until the network says it is free.
	if err := probeAddr(n, link.Attrs().Index, link.Attrs().HardwareAddr, s.Addr.Addr()); err != nil {
		return t, fmt.Errorf("%s: %w", s.Role, err)
	}
	if err := r.nl.AddrAdd(link, &netlink.Addr{IPNet: prefixToIPNet(s.Addr)}); err != nil {
		return t, fmt.Errorf("%s: add address %s: %w", s.Role, s.Addr, err)
	}
	if err := t.linkOffloads(s); err != nil {
		return t, err
	}
	if err := t.applyCongestion(); err != nil {
		return t, err
	}
	t.hostsFile = s.HostsFile
	if err := writeHostsFile(t.HostsFile(s.Role), s.Peers, spec.HostNames); err != nil {
		return t, fmt.Errorf("%s: %w", s.Role, err)
	}
	return t, nil
}

// linkOffloads turns tso/gso/gro off on the role's link where the kernel
// lets it. A macvlan or ipvlan child may keep what its parent does, and the
// parent is the host's, never changed: what stays on is recorded, as the
// condition the numbers were measured under.
func (t *Topology) linkOffloads(s LinkSpec) error {
	if s.Spec.Offloads {
		return t.ownOffloads(s.Role)
	}
	var still []string
	err := t.Roles[s.Role].NS.Do(func() error {
		if err := disableOffloads(RoleLink); err != nil {
			return err
		}
		var err error
		still, err = enabledOffloads(RoleLink)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", s.Role, err)
	}
	if len(still) == 0 {
		t.Offloads = "tso/gso/gro off on the role's interface"
	} else {
		t.Offloads = fmt.Sprintf("%s stay on on the role's interface: a %s child keeps them from %s, the host's interface, which is not changed",
			strings.Join(still, ", "), modeName(s.Mode), s.Parent)
	}
	if t.Spec.GSOMaxSegs > 0 {
		t.Offloads += fmt.Sprintf("; gso_max_segs %d", t.Spec.GSOMaxSegs)
	}
	return nil
}

func modeName(m string) string {
	if m == "" {
		return Macvlan
	}
	return m
}

// writeHostsFile writes a hosts file naming each role at its address, and
// each extra name at its role's.
func writeHostsFile(path string, addrs map[string]netip.Addr, extra map[string]string) error {
	roles := make([]string, 0, len(addrs))
	for r := range addrs {
		roles = append(roles, r)
	}
	sort.Slice(roles, func(i, j int) bool { return addrs[roles[i]].Less(addrs[roles[j]]) })
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	for _, role := range roles {
		names := []string{role}
		for name, r := range extra {
			if r == role {
				names = append(names, name)
			}
		}
		sort.Strings(names[1:])
		fmt.Fprintf(&b, "%s\t%s\n", addrs[role], strings.Join(names, " "))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("hosts file: %w", err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("hosts file: %w", err)
	}
	return nil
}
