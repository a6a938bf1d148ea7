// Package topology builds and removes the run's network: one namespace per
// role (client, relay, server) joined through a Linux bridge in a switch
// namespace, each role with one veth, fairness settings applied before any
// connection exists. Nothing is created in the host namespace.
//
// Up builds in this order and Down undoes it in reverse:
//
//	switch netns + br0 → per role: netns, veth (eth0 ↔ switch port),
//	addresses, links up, gso_max_segs, offloads → per-namespace congestion
//	control → /etc/netns/<netns>/hosts
package topology

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// Role names, in address order.
const (
	Client = "client"
	Relay  = "relay"
	Server = "server"
)

// DefaultRoles are the roles of the reference topology.
var DefaultRoles = []string{Client, Relay, Server}

// RoleLink is the name of each role's interface inside its namespace.
const RoleLink = "eth0"

const bridgeName = "br0"

// EtcNetns is where per-namespace files live (bind-mounted over /etc by
// `ip netns exec` and by the harness's launcher).
const EtcNetns = "/etc/netns"

// Spec is the network to build. It is plain data: Validate checks it
// without touching the kernel.
type Spec struct {
	Prefix     string       // unique per run; every name starts with it
	Subnet     netip.Prefix // role addresses are .2, .3, … in role order
	Roles      []string
	MTU        int    // 0 keeps the veth default (1500)
	GSOMaxSegs int    // 0 leaves the device default; 1 caps TCP to one segment per skb
	Offloads   bool   // true leaves tso/gso/gro as the kernel sets them
	Congestion string // per-namespace default TCP congestion control; "" inherits the host's
	// HostNames maps extra names to roles in each namespace's hosts file.
	HostNames map[string]string
}

// DefaultSpec is the reference's topology for prefix.
func DefaultSpec(prefix string) Spec {
	return Spec{
		Prefix:     prefix,
		Subnet:     netip.MustParsePrefix("10.77.0.0/24"),
		Roles:      DefaultRoles,
		GSOMaxSegs: 1,
		Congestion: "cubic",
		HostNames:  map[string]string{"relay.tw.test": Relay},
	}
}

// Validate checks the spec without side effects.
func (s Spec) Validate() error {
	if !strings.HasPrefix(s.Prefix, Prefix) || len(s.Prefix) <= len(Prefix) {
		return fmt.Errorf("topology prefix %q must start with %q", s.Prefix, Prefix)
	}
	if !s.Subnet.Addr().Is4() || s.Subnet.Bits() > 28 {
		return fmt.Errorf("topology subnet %s: need an IPv4 /28 or larger", s.Subnet)
	}
	if len(s.Roles) == 0 {
		return errors.New("topology: no roles")
	}
	for _, r := range s.Roles {
		if r == "" || len(r) > 15 || strings.ContainsAny(r, "/ ") {
			return fmt.Errorf("topology: bad role name %q", r)
		}
	}
	for name, role := range s.HostNames {
		if !contains(s.Roles, role) {
			return fmt.Errorf("topology: host name %s maps to unknown role %q", name, role)
		}
	}
	return nil
}

// NetnsName is the namespace name of a role (or "switch").
func (s Spec) NetnsName(role string) string { return s.Prefix + "-" + role }

// Addr is a role's address.
func (s Spec) Addr(role string) netip.Addr {
	a := s.Subnet.Masked().Addr().As4()
	for i, r := range s.Roles {
		if r == role {
			a[3] += byte(i + 2)
			return netip.AddrFrom4(a)
		}
	}
	return netip.Addr{}
}

// Role is one endpoint of the topology.
type Role struct {
	Name string
	NS   *ns.NS
	Addr netip.Addr
	nl   *netlink.Handle
}

// Topology is a built network.
type Topology struct {
	Spec   Spec
	Switch *ns.NS
	Roles  map[string]*Role
	LinkFacts
	hostsFile string // a one-role topology's hosts file, when not under EtcNetns
}

// LinkFacts are read back from the kernel after Up, for the results' env
// block (and, for a role built on another host, carried back from there).
type LinkFacts struct {
	Congestion    string   // what the namespaces actually use
	SysctlChanges []string // global sysctls changed and restored during Up
	Offloads      string   // what was applied, in the reference's words
}

// switchRole names the switch's namespace among the roles'.
const switchRole = "switch"

// Up builds the topology. On failure it removes whatever it had built.
func Up(spec Spec) (t *Topology, err error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	t = &Topology{Spec: spec, Roles: map[string]*Role{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Down())
			t = nil
		}
	}()
	if t.Switch, err = NewNS(spec.NetnsName(switchRole)); err != nil {
		return t, err
	}
	swnl, err := t.Switch.Netlink()
	if err != nil {
		return t, err
	}
	defer swnl.Close()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridgeName}}
	if err := swnl.LinkAdd(br); err != nil {
		return t, fmt.Errorf("switch: create bridge: %w", err)
	}
	for _, name := range spec.Roles {
		if err := t.addRole(swnl, br, name); err != nil {
			return t, err
		}
	}
	if err := swnl.LinkSetUp(br); err != nil {
		return t, fmt.Errorf("switch: bring up bridge: %w", err)
	}
	if err := t.applyOffloads(); err != nil {
		return t, err
	}
	if err := t.applyCongestion(); err != nil {
		return t, err
	}
	if err := t.writeHosts(); err != nil {
		return t, err
	}
	return t, nil
}

func (t *Topology) addRole(swnl *netlink.Handle, br *netlink.Bridge, name string) error {
	n, err := NewNS(t.Spec.NetnsName(name))
	if err != nil {
		return err
	}
	r := &Role{Name: name, NS: n, Addr: t.Spec.Addr(name)}
	t.Roles[name] = r
	if r.nl, err = n.Netlink(); err != nil {
		return err
	}
	// Both ends are born in their namespaces: no name ever exists in the
	// host namespace, even for a moment.
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: RoleLink, Namespace: netlink.NsFd(n.FD()), MTU: t.Spec.MTU},
		PeerName:      name,
		PeerNamespace: netlink.NsFd(t.Switch.FD()),
		PeerMTU:       uint32(t.Spec.MTU),
	}
	if err := swnl.LinkAdd(veth); err != nil {
		return fmt.Errorf("%s: create veth: %w", name, err)
	}
	port, err := swnl.LinkByName(name)
	if err != nil {
		return fmt.Errorf("%s: find switch port: %w", name, err)
	}
	if err := swnl.LinkSetMaster(port, br); err != nil {
		return fmt.Errorf("%s: attach switch port: %w", name, err)
	}
	if err := t.capGSO(swnl, port); err != nil {
		return fmt.Errorf("%s: switch port: %w", name, err)
	}
	if err := swnl.LinkSetUp(port); err != nil {
		return fmt.Errorf("%s: bring up switch port: %w", name, err)
	}
	lo, err := r.nl.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("%s: find lo: %w", name, err)
	}
	if err := r.nl.LinkSetUp(lo); err != nil {
		return fmt.Errorf("%s: bring up lo: %w", name, err)
	}
	link, err := r.nl.LinkByName(RoleLink)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", name, RoleLink, err)
	}
	addr := &netlink.Addr{IPNet: prefixToIPNet(netip.PrefixFrom(r.Addr, t.Spec.Subnet.Bits()))}
	if err := r.nl.AddrAdd(link, addr); err != nil {
		return fmt.Errorf("%s: add address %s: %w", name, r.Addr, err)
	}
	if err := t.capGSO(r.nl, link); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := r.nl.LinkSetUp(link); err != nil {
		return fmt.Errorf("%s: bring up %s: %w", name, RoleLink, err)
	}
	return nil
}

// capGSO applies gso_max_segs before the link is up, so no socket ever sees
// the uncapped device.
func (t *Topology) capGSO(h *netlink.Handle, l netlink.Link) error {
	if t.Spec.GSOMaxSegs <= 0 {
		return nil
	}
	if err := h.LinkSetGSOMaxSegs(l, t.Spec.GSOMaxSegs); err != nil {
		return fmt.Errorf("set gso_max_segs %d on %s: %w", t.Spec.GSOMaxSegs, l.Attrs().Name, err)
	}
	return nil
}

// RxBytes is the cumulative received byte count of a role's interface.
func (t *Topology) RxBytes(role string) (uint64, error) {
	r, ok := t.Roles[role]
	if !ok || r.nl == nil {
		return 0, fmt.Errorf("rx bytes: no role %q", role)
	}
	l, err := r.nl.LinkByName(RoleLink)
	if err != nil {
		return 0, fmt.Errorf("%s: read %s counters: %w", role, RoleLink, err)
	}
	st := l.Attrs().Statistics
	if st == nil {
		return 0, fmt.Errorf("%s: %s has no statistics", role, RoleLink)
	}
	return st.RxBytes, nil
}

func (t *Topology) writeHosts() error {
	addrs := map[string]netip.Addr{}
	for _, role := range t.Spec.Roles {
		addrs[role] = t.Spec.Addr(role)
	}
	for _, role := range t.Spec.Roles {
		if err := writeHostsFile(t.HostsFile(role), addrs, t.Spec.HostNames); err != nil {
			return fmt.Errorf("%s: %w", role, err)
		}
	}
	return nil
}

// HostsFile is the hosts file of a role's namespace, for the launcher to
// bind over /etc/hosts.
func (t *Topology) HostsFile(role string) string {
	if t.hostsFile != "" {
		return t.hostsFile
	}
	return filepath.Join(EtcNetns, t.Spec.NetnsName(role), "hosts")
}

// OpenSwitch opens the switch namespace of the topology Up built for
// spec (by this process or another), for the userspace impairment's
// bridge ports; the caller closes it.
func OpenSwitch(spec Spec) (*ns.NS, error) { return ns.Open(spec.NetnsName(switchRole)) }

// Release closes the topology's handles and leaves what it built in
// place: a host's copy that built a role hands it over to the run, and its
// Clean removes it.
func (t *Topology) Release() {
	for _, r := range t.Roles {
		if r.nl != nil {
			r.nl.Close()
			r.nl = nil
		}
		r.NS.Close()
	}
}

// Down removes everything Up made. Processes running in the namespaces
// must have been stopped first: deleting a namespace does not kill them.
// Safe to call twice and on a partly built topology.
func (t *Topology) Down() error {
	var errs []error
	for _, r := range t.Roles {
		if r.nl != nil {
			r.nl.Close()
			r.nl = nil
		}
		errs = append(errs, r.NS.Close())
	}
	if t.Switch != nil {
		errs = append(errs, t.Switch.Close())
	}
	// One host's part of a run on several (UpOnLink) removes only its
	// role's: the others' may share this filesystem.
	scope := t.Spec.Prefix
	if t.Switch == nil && len(t.Spec.Roles) == 1 {
		scope = t.Spec.NetnsName(t.Spec.Roles[0])
	}
	errs = append(errs, Clean(scope)...)
	return errors.Join(errs...)
}

func prefixToIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
