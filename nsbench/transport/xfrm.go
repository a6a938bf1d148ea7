package transport

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// The kernel IPsec work the IPsec paths do in a role's namespace, as role
// ops: installing manual SAs and policies, reading back the SAs the kernel
// holds (what IKE daemons keyed included), flushing them, and tunnel
// mode's route between the inner addresses.

// xfrmSA is one manual SA to install, from role From to role To (named in
// the error).
type xfrmSA struct {
	From, To string
	Src, Dst netip.Addr
	SPI      int
	Keys     saKeys
}

// xfrmPolicy is one policy: traffic from Src to Dst (the selector, /32s)
// in direction Dir goes through the ESP SA from TmplSrc to TmplDst.
type xfrmPolicy struct {
	Dir              netlink.Dir
	Src, Dst         netip.Addr
	TmplSrc, TmplDst netip.Addr
}

// xfrmAdd is one side's SAs and policies, with the variant's transform.
type xfrmAdd struct {
	Variant  string // a key of espAlgos
	Mode     netlink.Mode
	SAs      []xfrmSA
	Policies []xfrmPolicy
}

// xfrmHeld is an SA the kernel holds, as the paths check and count it:
// its keys stay in the namespace.
type xfrmHeld struct {
	Transform string // describe's words
	Mode      netlink.Mode
	Bytes     uint64 // what it carried
}

// innerRoute is tunnel mode's route to the peer's inner address Peer
// through the peer's outer one, Via, from the role's inner address Src.
type innerRoute struct {
	Peer, Via, Src netip.Addr
	Remove         bool // take it away again (gone already is no error)
}

var (
	xfrmAddOp = role.NewOp("ipsec.add-xfrm", func(_ context.Context, x xfrmAdd) (role.Nothing, error) {
		a, ok := espAlgos[x.Variant]
		if !ok {
			return role.Nothing{}, fmt.Errorf("unknown ESP variant %q", x.Variant)
		}
		for _, s := range x.SAs {
			if err := netlink.XfrmStateAdd(a.state(s.Src, s.Dst, s.SPI, x.Mode, s.Keys)); err != nil {
				return role.Nothing{}, fmt.Errorf("add SA %s → %s (spi %#x): %w", s.From, s.To, s.SPI, err)
			}
		}
		for _, p := range x.Policies {
			pol := &netlink.XfrmPolicy{
				Src: prefix32(p.Src), Dst: prefix32(p.Dst), Dir: p.Dir,
				Tmpls: []netlink.XfrmPolicyTmpl{{
					Src: p.TmplSrc.AsSlice(), Dst: p.TmplDst.AsSlice(),
					Proto: netlink.XFRM_PROTO_ESP, Mode: x.Mode, Reqid: ipsecReqid,
				}},
			}
			if err := netlink.XfrmPolicyAdd(pol); err != nil {
				return role.Nothing{}, fmt.Errorf("add policy %s %s → %s: %w", p.Dir, p.Src, p.Dst, err)
			}
		}
		return role.Nothing{}, nil
	})
	xfrmStatesOp = role.NewOp("ipsec.xfrm-states", func(context.Context, role.Nothing) ([]xfrmHeld, error) {
		states, err := netlink.XfrmStateList(netlink.FAMILY_ALL)
		if err != nil {
			return nil, err
		}
		held := make([]xfrmHeld, len(states))
		for i, s := range states {
			held[i] = xfrmHeld{Transform: describe(s), Mode: s.Mode, Bytes: s.Statistics.Bytes}
		}
		return held, nil
	})
	xfrmFlushOp = role.NewOp("ipsec.flush-xfrm", func(context.Context, role.Nothing) (role.Nothing, error) {
		return role.Nothing{}, errors.Join(netlink.XfrmPolicyFlush(), netlink.XfrmStateFlush(0))
	})
	innerRouteOp = role.NewOp("ipsec.inner-route", func(_ context.Context, r innerRoute) (role.Nothing, error) {
		eth, err := netlink.LinkByName(topology.RoleLink)
		if err != nil {
			return role.Nothing{}, err
		}
		rt := &netlink.Route{LinkIndex: eth.Attrs().Index, Dst: prefix32(r.Peer), Gw: r.Via.AsSlice(), Src: r.Src.AsSlice()}
		if r.Remove {
			if err := netlink.RouteDel(rt); err != nil && !errors.Is(err, unix.ESRCH) {
				return role.Nothing{}, err
			}
			return role.Nothing{}, nil
		}
		return role.Nothing{}, netlink.RouteAdd(rt)
	})
)

// xfrmStates lists the SAs the kernel holds in role r.
func xfrmStates(ctx context.Context, r *role.Role) ([]xfrmHeld, error) {
	states, err := xfrmStatesOp.On(ctx, r, role.Nothing{})
	if err != nil {
		return nil, fmt.Errorf("list SAs: %w", err)
	}
	return states, nil
}

// checkHeld reads back the SAs each of roles holds: n of them, each in
// mode with transform want. It returns the transform held, for the label.
func checkHeld(ctx context.Context, tb *Testbed, roles []string, n int, mode netlink.Mode, want string) (string, error) {
	var held string
	for _, name := range roles {
		states, err := xfrmStates(ctx, tb.Roles[name])
		if err != nil {
			return "", err // it names the role
		}
		if len(states) != n {
			return "", fmt.Errorf("%s: the kernel holds %d SAs, want %d", name, len(states), n)
		}
		for _, s := range states {
			held = s.Transform
			if held != want || s.Mode != mode {
				return "", fmt.Errorf("%s holds a %s SA with %s, not %s", name, s.Mode, held, want)
			}
		}
	}
	return held, nil
}

// espBytes reads the bytes r's SAs carried, both directions summed: the
// kernel's own count of what went through ESP.
func espBytes(r *role.Role) func() (int64, error) {
	return func() (int64, error) {
		states, err := xfrmStates(context.Background(), r)
		if err != nil {
			return 0, fmt.Errorf("tunnel bytes: %w", err)
		}
		if len(states) == 0 {
			return 0, fmt.Errorf("tunnel bytes: no SA in the %s's namespace", r.Name())
		}
		var total int64
		for _, s := range states {
			total += int64(s.Bytes)
		}
		return total, nil
	}
}

// ipsecUp is what an IPsec path added to the roles' kernels, to undo.
type ipsecUp struct {
	tb    *Testbed
	xfrm  []string // roles whose SAs and policies were (perhaps partly) added
	inner []ipsecInner
	once  sync.Once
	err   error
}

// ipsecInner is tunnel mode's inner address on a role's lo and its route
// to the peer's inner address.
type ipsecInner struct {
	role   string
	route  innerRoute
	routed bool
}

// addInner puts role's inner address on lo and routes the peer's inner
// address through the peer's outer one with the inner address as source:
// the route the policy's selector then catches (without the source hint
// the client would send from its outer address, outside the selector,
// and the traffic would go plain).
func (u *ipsecUp) addInner(ctx context.Context, name string, inner, peerInner, peerOuter netip.Addr) error {
	r := u.tb.Roles[name]
	if err := role.AddLoopback(ctx, r, inner); err != nil {
		return err
	}
	rt := innerRoute{Peer: peerInner, Via: peerOuter, Src: inner}
	u.inner = append(u.inner, ipsecInner{role: name, route: rt})
	if _, err := innerRouteOp.On(ctx, r, rt); err != nil {
		return fmt.Errorf("route %s via %s: %w", peerInner, peerOuter, err)
	}
	u.inner[len(u.inner)-1].routed = true
	return nil
}

// close removes the policies and SAs (the run's namespaces are private to
// it: flushing them removes exactly what Up added), then tunnel mode's
// routes and inner addresses.
func (u *ipsecUp) close() error {
	u.once.Do(func() {
		ctx := context.Background()
		var errs []error
		for _, name := range u.xfrm {
			if _, err := xfrmFlushOp.On(ctx, u.tb.Roles[name], role.Nothing{}); err != nil {
				errs = append(errs, fmt.Errorf("ipsec: %s: flush SAs and policies: %w", name, err))
			}
		}
		for _, in := range u.inner {
			r := u.tb.Roles[in.role]
			var err error
			if in.routed {
				rt := in.route
				rt.Remove = true
				if _, rerr := innerRouteOp.On(ctx, r, rt); rerr != nil {
					err = fmt.Errorf("route: %w", rerr)
				}
			}
			if aerr := role.RemoveLoopback(ctx, r, in.route.Src); aerr != nil {
				err = errors.Join(err, fmt.Errorf("address: %w", aerr))
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("ipsec: %s: remove %s from lo: %w", in.role, in.route.Src, err))
			}
		}
		u.err = errors.Join(errs...)
	})
	return u.err
}
