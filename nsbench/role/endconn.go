package role

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Conn is a TCP connection as one end sees it.
type Conn struct {
	Local, Remote netip.AddrPort
}

// tcpListen is the kernel's TCP_LISTEN state.
const tcpListen = 10

// endConnOp destroys the role's TCP socket of c (sock_diag's
// SOCK_DESTROY, as `ss -K` does): a connection whose peer is gone, still
// retrying what it had queued. Only IPv4 sockets (AF_INET: the fixtures'
// sshd listens on 0.0.0.0), the roles' addresses. A connection already
// gone is no error: its end came first.
//
// The socket is found in the namespace's table first, a connection and
// not a listener, and destroyed by its cookie: the kernel's lookup by
// addresses alone falls back to the listener on the local port when the
// connection is gone, and would destroy that (a restarted sshd then
// refused every login).
var endConnOp = NewOp("role.end-connection", func(_ context.Context, c Conn) (Nothing, error) {
	if !c.Local.Addr().Is4() || !c.Remote.Addr().Is4() || c.Local.Port() == 0 || c.Remote.Port() == 0 {
		return Nothing{}, fmt.Errorf("end connection %s → %s: want IPv4 addresses with ports", c.Local, c.Remote)
	}
	socks, err := netlink.SocketDiagTCP(unix.AF_INET)
	if err != nil {
		return Nothing{}, fmt.Errorf("end connection %s → %s: list sockets: %w", c.Local, c.Remote, err)
	}
	for _, s := range socks {
		if s.State == tcpListen || !sameConn(s.ID, c) {
			continue
		}
		err := destroySocket(s.ID)
		if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ESTALE) {
			return Nothing{}, fmt.Errorf("end connection %s → %s: %w", c.Local, c.Remote, err)
		}
	}
	return Nothing{}, nil
})

// EndConnection ends role r's TCP connection c (endConnOp).
func EndConnection(ctx context.Context, r *Role, c Conn) error {
	_, err := endConnOp.On(ctx, r, c)
	return err
}

func sameConn(id netlink.SocketID, c Conn) bool {
	local, ok1 := netip.AddrFromSlice(id.Source.To4())
	remote, ok2 := netip.AddrFromSlice(id.Destination.To4())
	return ok1 && ok2 && netip.AddrPortFrom(local, id.SourcePort) == c.Local && netip.AddrPortFrom(remote, id.DestinationPort) == c.Remote
}

// destroySocket sends SOCK_DESTROY for the IPv4 TCP socket id, cookie
// included: the kernel destroys that socket or none (ESTALE).
func destroySocket(id netlink.SocketID) error {
	req := nl.NewNetlinkRequest(nl.SOCK_DESTROY, unix.NLM_F_ACK)
	req.AddData(destroyRequest(id))
	_, err := req.Execute(unix.NETLINK_INET_DIAG, 0)
	return err
}

// destroyRequest is struct inet_diag_req_v2 for one IPv4 TCP socket.
type destroyRequest netlink.SocketID

func (destroyRequest) Len() int { return 56 }

func (r destroyRequest) Serialize() []byte {
	b := make([]byte, 56)
	b[0], b[1] = unix.AF_INET, unix.IPPROTO_TCP // family, protocol; ext, pad, states 0
	binary.BigEndian.PutUint16(b[8:], r.SourcePort)
	binary.BigEndian.PutUint16(b[10:], r.DestinationPort)
	copy(b[12:16], r.Source.To4())
	copy(b[28:32], r.Destination.To4())
	binary.NativeEndian.PutUint32(b[44:], r.Interface)
	binary.NativeEndian.PutUint32(b[48:], r.Cookie[0])
	binary.NativeEndian.PutUint32(b[52:], r.Cookie[1])
	return b
}
