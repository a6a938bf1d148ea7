package role

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Conn is a TCP connection as one end sees it.
type Conn struct {
	Local, Remote netip.AddrPort
}

// endConnOp destroys the role's TCP socket of c (sock_diag's
// SOCK_DESTROY, as `ss -K` does): a connection whose peer is gone, still
// retrying what it had queued. Only IPv4 sockets (AF_INET: the fixtures'
// sshd listens on 0.0.0.0), the roles' addresses. A socket
// already gone is no error: its end came first.
var endConnOp = NewOp("role.end-connection", func(_ context.Context, c Conn) (Nothing, error) {
	if !c.Local.Addr().Is4() || !c.Remote.Addr().Is4() || c.Local.Port() == 0 || c.Remote.Port() == 0 {
		return Nothing{}, fmt.Errorf("end connection %s → %s: want IPv4 addresses with ports", c.Local, c.Remote)
	}
	err := netlink.SocketDestroy(net.TCPAddrFromAddrPort(c.Local), net.TCPAddrFromAddrPort(c.Remote))
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return Nothing{}, fmt.Errorf("end connection %s → %s: %w", c.Local, c.Remote, err)
	}
	return Nothing{}, nil
})

// EndConnection ends role r's TCP connection c (endConnOp).
func EndConnection(ctx context.Context, r *Role, c Conn) error {
	_, err := endConnOp.On(ctx, r, c)
	return err
}
