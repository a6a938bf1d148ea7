package role

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// MaxFlap bounds how long a link flap keeps a role's link down: a value
// from the wire is checked against it.
const MaxFlap = 5 * time.Minute

// Flap is when a role's link was taken down and brought up again, on its
// host's clock (Unix ns).
type Flap struct {
	DownNs, UpNs int64
}

// linkFlapOp takes the role's own link (topology.RoleLink, in the role's
// namespace: never the host's) down for d, then up again, as a Wi-Fi drop
// would. The link's IPv4 routes, which the kernel removes with a link
// that goes down, are put back as they were, as a client's network
// manager does on reconnecting. The link comes up again even when ctx
// ends first.
var linkFlapOp = NewOp("role.link-flap", func(ctx context.Context, d time.Duration) (Flap, error) {
	if d <= 0 || d > MaxFlap {
		return Flap{}, fmt.Errorf("link flap of %v: want up to %v", d, MaxFlap)
	}
	l, err := netlink.LinkByName(topology.RoleLink)
	if err != nil {
		return Flap{}, fmt.Errorf("link %s: %w", topology.RoleLink, err)
	}
	routes, err := netlink.RouteList(l, netlink.FAMILY_V4)
	if err != nil {
		return Flap{}, fmt.Errorf("link %s: routes: %w", topology.RoleLink, err)
	}
	if err := netlink.LinkSetDown(l); err != nil {
		return Flap{}, fmt.Errorf("link %s down: %w", topology.RoleLink, err)
	}
	f := Flap{DownNs: time.Now().UnixNano()}
	down := time.NewTimer(d)
	select {
	case <-ctx.Done():
	case <-down.C:
	}
	down.Stop()
	if err := netlink.LinkSetUp(l); err != nil {
		return f, fmt.Errorf("link %s up: %w", topology.RoleLink, err)
	}
	f.UpNs = time.Now().UnixNano()
	var errs []error
	for _, r := range routes {
		if err := netlink.RouteReplace(&r); err != nil {
			errs = append(errs, fmt.Errorf("route %s: %w", r, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return f, fmt.Errorf("link %s up, its routes not all back: %w", topology.RoleLink, err)
	}
	return f, ctx.Err()
})

// FlapLink takes role r's link down for d and up again (linkFlapOp).
func FlapLink(ctx context.Context, r *Role, d time.Duration) (Flap, error) {
	return linkFlapOp.On(ctx, r, d)
}
