package role

import (
	"context"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// A role's loopback addresses: the addresses a tunnel's inner end needs,
// which exist only behind it.

// LoopbackAddr is an address on a role's lo, as a /32.
type LoopbackAddr struct {
	Addr   netip.Addr
	Remove bool // take it off again
}

var (
	loopbackOp = NewOp("role.loopback-addr", func(_ context.Context, a LoopbackAddr) (Nothing, error) {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return Nothing{}, err
		}
		addr := &netlink.Addr{IPNet: netipx(a.Addr)}
		if a.Remove {
			return Nothing{}, netlink.AddrDel(lo, addr)
		}
		return Nothing{}, netlink.AddrReplace(lo, addr)
	})
)

// AddLoopback puts a on role r's lo as a /32: an address that exists
// only behind a tunnel (its inner end, or what sshuttle captures).
func AddLoopback(ctx context.Context, r *Role, a netip.Addr) error {
	_, err := loopbackOp.On(ctx, r, LoopbackAddr{Addr: a})
	return err
}

// RemoveLoopback takes a off role r's lo again.
func RemoveLoopback(ctx context.Context, r *Role, a netip.Addr) error {
	_, err := loopbackOp.On(ctx, r, LoopbackAddr{Addr: a, Remove: true})
	return err
}

func netipx(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
}
