package nstest

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// Machine is a network namespace standing for another host in a
// multi-host test: its interface "nic" holds Addr on the cable.
type Machine struct {
	NS   *ns.NS
	Addr netip.Prefix
}

// MachineNIC is each machine's interface on the cable.
const MachineNIC = "nic"

// Machines makes two machines named prefix-ma and prefix-mb, joined by a
// veth pair standing for the cable, their interfaces at subnet .1 and .2
// and up. Nothing is created in the host's namespace. The test's cleanup
// removes them.
func Machines(t *testing.T, prefix string, subnet netip.Prefix) [2]Machine {
	t.Helper()
	RequireRoot(t)
	var ms [2]Machine
	base := subnet.Masked().Addr()
	for i, name := range []string{"ma", "mb"} {
		n, err := ns.Create(prefix + "-" + name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close(); ns.Delete(n.Name) })
		base = base.Next()
		ms[i] = Machine{NS: n, Addr: netip.PrefixFrom(base, subnet.Bits())}
	}
	cable := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: MachineNIC, Namespace: netlink.NsFd(ms[0].NS.FD())},
		PeerName: MachineNIC, PeerNamespace: netlink.NsFd(ms[1].NS.FD())}
	if err := netlink.LinkAdd(cable); err != nil {
		t.Fatalf("cable: %v", err)
	}
	for _, m := range ms {
		err := m.NS.Do(func() error {
			l, err := netlink.LinkByName(MachineNIC)
			if err != nil {
				return err
			}
			a, err := netlink.ParseAddr(m.Addr.String())
			if err != nil {
				return err
			}
			if err := netlink.AddrAdd(l, a); err != nil {
				return err
			}
			if lo, err := netlink.LinkByName("lo"); err == nil {
				netlink.LinkSetUp(lo)
			}
			return netlink.LinkSetUp(l)
		})
		if err != nil {
			t.Fatal(fmt.Errorf("machine %s: %w", m.NS.Name, err))
		}
	}
	return ms
}
