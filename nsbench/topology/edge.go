package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The edge: a role on its own host whose egress a WAN condition impairs
// (LinkSpec.Edge). The userspace impairment needs the role's frames to pass
// a process before they reach the wire, and a macvlan child hands them to
// its parent directly. So the role's namespace holds three links:
//
//	eth0 (veth, the role's address, the child's MAC) ⇄ wan0 (veth) ⇄ wire0 (macvlan child on the host's interface)
//
// Between wan0 and wire0 the pipe (tc mirred redirects, both ways) carries
// every frame at once while no condition is in force; the impairment's
// forwarder takes its place while one is (SplitPipe, then JoinPipe). eth0
// carries the child's MAC, so frames the network sends the role reach it
// unchanged. wan0 and wire0 have no address; with rp_filter strict and
// arp_ignore 8 the role's own stack drops the copies of frames it would
// otherwise take from them while the forwarder reads them.
const (
	// EdgeLink is the veth peer of the role's eth0.
	EdgeLink = "wan0"
	// WireLink is the macvlan (or ipvlan) child on the host's interface.
	WireLink = "wire0"
)

// edgeSysctls keep the role's stack off the edge's two links.
var edgeSysctls = map[string]string{"rp_filter": "1", "arp_ignore": "8", "accept_local": "0"}

// buildEdge makes eth0 and wan0 beside the child wire0 (already in the
// role's namespace), with wire0's MAC on eth0, and joins wan0 and wire0 by
// the pipe. It runs in the role's namespace through r.
func buildEdge(r *Role, mtu int) error {
	wire, err := r.nl.LinkByName(WireLink)
	if err != nil {
		return fmt.Errorf("find %s: %w", WireLink, err)
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: RoleLink, MTU: mtu, HardwareAddr: wire.Attrs().HardwareAddr},
		PeerName: EdgeLink}
	if err := r.nl.LinkAdd(veth); err != nil {
		return fmt.Errorf("create %s ⇄ %s: %w", RoleLink, EdgeLink, err)
	}
	return r.NS.Do(func() error {
		for _, l := range []string{EdgeLink, WireLink} {
			for k, v := range edgeSysctls {
				p := filepath.Join("/proc/sys/net/ipv4/conf", l, k)
				if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
					return fmt.Errorf("edge %s: %w", l, err)
				}
			}
			if err := disableOffloads(l); err != nil {
				return fmt.Errorf("edge: %w", err)
			}
			link, err := netlink.LinkByName(l)
			if err == nil {
				err = netlink.LinkSetUp(link)
			}
			if err != nil {
				return fmt.Errorf("edge: bring up %s: %w", l, err)
			}
		}
		return JoinPipe()
	})
}

// JoinPipe joins wan0 and wire0 in the calling thread's namespace: every
// frame one receives leaves on the other at once (a clsact qdisc on each
// with a u32 match-all filter whose mirred action redirects to the other).
// Joining a joined pipe is harmless.
func JoinPipe() error {
	a, b, err := edgeLinks()
	if err != nil {
		return err
	}
	for _, p := range [][2]netlink.Link{{a, b}, {b, a}} {
		from, to := p[0].Attrs(), p[1].Attrs()
		q := &netlink.GenericQdisc{QdiscType: "clsact",
			QdiscAttrs: netlink.QdiscAttrs{LinkIndex: from.Index, Parent: netlink.HANDLE_CLSACT, Handle: netlink.MakeHandle(0xffff, 0)}}
		if err := netlink.QdiscReplace(q); err != nil {
			return fmt.Errorf("pipe: clsact on %s: %w", from.Name, err)
		}
		f := &netlink.U32{
			FilterAttrs: netlink.FilterAttrs{LinkIndex: from.Index, Parent: netlink.HANDLE_MIN_INGRESS, Priority: 1,
				Protocol: unix.ETH_P_ALL},
			Sel:     &netlink.TcU32Sel{Flags: netlink.TC_U32_TERMINAL, Nkeys: 1, Keys: []netlink.TcU32Key{{}}},
			Actions: []netlink.Action{netlink.NewMirredAction(to.Index)},
		}
		if err := netlink.FilterReplace(f); err != nil {
			return fmt.Errorf("pipe: redirect %s → %s: %w", from.Name, to.Name, err)
		}
	}
	return nil
}

// SplitPipe takes the pipe away (the clsact qdiscs, with their filters):
// nothing joins wan0 and wire0 until the forwarder opens them. Splitting a
// split pipe is harmless.
func SplitPipe() error {
	a, b, err := edgeLinks()
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range []netlink.Link{a, b} {
		q := &netlink.GenericQdisc{QdiscType: "clsact",
			QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Parent: netlink.HANDLE_CLSACT, Handle: netlink.MakeHandle(0xffff, 0)}}
		if err := netlink.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("pipe: remove clsact on %s: %w", l.Attrs().Name, err))
		}
	}
	return errors.Join(errs...)
}

func edgeLinks() (netlink.Link, netlink.Link, error) {
	a, err := netlink.LinkByName(EdgeLink)
	if err != nil {
		return nil, nil, fmt.Errorf("pipe: %s: %w (a role built without an edge?)", EdgeLink, err)
	}
	b, err := netlink.LinkByName(WireLink)
	if err != nil {
		return nil, nil, fmt.Errorf("pipe: %s: %w", WireLink, err)
	}
	return a, b, nil
}
