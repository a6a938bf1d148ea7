package nstest

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// Machine is a network namespace standing for another host in a
// multi-host test: its interface holds Addr on the emulated LAN, and its
// cable ends at Port on the switch.
type Machine struct {
	NS   *ns.NS
	Addr netip.Prefix
	Port string // its cable's end in the switch's namespace
}

// MachineNIC is each machine's interface on the cable, for Machines.
const MachineNIC = "nic"

// LANSpec is an emulated LAN: machines, each a namespace named
// Prefix-NAME whose interface NIC holds an address on Subnet, plugged
// into one switch (a bridge in a namespace of its own, Prefix-Switch).
type LANSpec struct {
	Prefix string
	Subnet netip.Prefix
	NIC    string
	Names  []string // the machines
	First  int      // the first machine's host number on Subnet; the others follow
	Switch string   // the switch namespace's name after the prefix
	// SwitchHost gives the switch's bridge an address on Subnet (that
	// host number): the orchestrator's, for tests that reach the machines
	// from the switch's namespace. 0: none.
	SwitchHost int
}

// LAN is the switch and the machines NewLAN built.
type LAN struct {
	Switch     *ns.NS
	SwitchAddr netip.Addr // invalid without SwitchHost
	Machines   []Machine
}

// NewLAN builds the LAN s names: the one builder of emulated machines
// (Machines, and the remotetest lab that runs an sshd on each). Nothing
// is created in the host's namespace: each cable is born with both ends
// in namespaces of the test's own. The test's cleanup removes it all.
func NewLAN(tb testing.TB, s LANSpec) *LAN {
	tb.Helper()
	RequireRoot(tb)
	fail := func(err error) {
		if err != nil {
			tb.Helper()
			tb.Fatalf("emulated LAN %s: %v", s.Prefix, err)
		}
	}
	lan := &LAN{}
	var err error
	lan.Switch, err = ns.Create(s.Prefix + "-" + s.Switch)
	fail(err)
	tb.Cleanup(func() { lan.Switch.Close(); ns.Delete(lan.Switch.Name) })
	snl, err := lan.Switch.Netlink()
	fail(err)
	defer snl.Close()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
	fail(snl.LinkAdd(br))
	var brAddr netip.Prefix
	if s.SwitchHost > 0 {
		lan.SwitchAddr = hostAddr(s.Subnet, s.SwitchHost)
		brAddr = netip.PrefixFrom(lan.SwitchAddr, s.Subnet.Bits())
	}
	fail(addrUp(snl, "br0", brAddr))
	fail(addrUp(snl, "lo", netip.Prefix{}))
	for i, name := range s.Names {
		m := Machine{Addr: netip.PrefixFrom(hostAddr(s.Subnet, s.First+i), s.Subnet.Bits()), Port: "p" + strconv.Itoa(i)}
		m.NS, err = ns.Create(s.Prefix + "-" + name)
		fail(err)
		tb.Cleanup(func() { m.NS.Close(); ns.Delete(m.NS.Name) })
		fail(snl.LinkAdd(&netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: s.NIC, Namespace: netlink.NsFd(m.NS.FD())},
			PeerName:  m.Port, PeerNamespace: netlink.NsFd(lan.Switch.FD()),
		}))
		p, err := snl.LinkByName(m.Port)
		fail(err)
		fail(snl.LinkSetMaster(p, br))
		fail(snl.LinkSetUp(p))
		mnl, err := m.NS.Netlink()
		fail(err)
		err = addrUp(mnl, s.NIC, m.Addr)
		if err == nil {
			err = addrUp(mnl, "lo", netip.Prefix{})
		}
		mnl.Close()
		fail(err)
		lan.Machines = append(lan.Machines, m)
	}
	return lan
}

// Machines makes two machines named prefix-ma and prefix-mb on a LAN of
// their own, their interfaces MachineNIC at subnet .1 and .2 and up.
func Machines(t *testing.T, prefix string, subnet netip.Prefix) [2]Machine {
	t.Helper()
	lan := NewLAN(t, LANSpec{Prefix: prefix, Subnet: subnet, NIC: MachineNIC, Names: []string{"ma", "mb"}, First: 1, Switch: "sw"})
	return [2]Machine{lan.Machines[0], lan.Machines[1]}
}

// hostAddr is host number n on subnet.
func hostAddr(subnet netip.Prefix, n int) netip.Addr {
	a := subnet.Masked().Addr()
	for range n {
		a = a.Next()
	}
	return a
}

// addrUp gives interface name address p (none when invalid) and brings
// it up.
func addrUp(h *netlink.Handle, name string, p netip.Prefix) error {
	l, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find %s: %w", name, err)
	}
	if p.IsValid() {
		a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
		if err := h.AddrAdd(l, a); err != nil {
			return fmt.Errorf("add %s to %s: %w", p, name, err)
		}
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("bring up %s: %w", name, err)
	}
	return nil
}
