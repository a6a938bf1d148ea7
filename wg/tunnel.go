package wg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/twnsbench/twnsbench/nsbench/role"
)

// End is one side of a tunnel: the role its device lives in (a userspace
// device's daemon runs as the role's program) and the device.
type End struct {
	Role *role.Role
	Link Link
}

// TunnelSpec is a point-to-point tunnel: the server listens on Endpoint's
// port, the client knows the server at Endpoint (an address of the
// server's namespace that the client's namespace reaches) and keeps the
// path alive every Keepalive.
type TunnelSpec struct {
	Server, Client End
	Endpoint       netip.AddrPort
	Keepalive      time.Duration
}

// Tunnel is a built tunnel: two devices that have completed a handshake.
type Tunnel struct {
	Server, Client *Device
	ServerKey      wgtypes.Key // public keys, to find each side's peer
	ClientKey      wgtypes.Key

	server Config // the server's configuration, to start it again as it was
}

// Up builds the tunnel in this order: keys, the server's device, its
// configuration (key, port, the client as peer), the client's device, its
// configuration (key, the server as peer with endpoint and keepalive) —
// turning the keepalive on sends the first handshake initiation — and
// then waits until the client has completed a handshake. Waiting ends with
// ctx. On failure it removes what it made.
func Up(ctx context.Context, spec TunnelSpec) (t *Tunnel, err error) {
	serverPriv, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		return nil, fmt.Errorf("wireguard keys: %w", err)
	}
	clientPriv, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		return nil, fmt.Errorf("wireguard keys: %w", err)
	}
	t = &Tunnel{ServerKey: serverPriv.PublicKey(), ClientKey: clientPriv.PublicKey()}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close())
			t = nil
		}
	}()
	port := int(spec.Endpoint.Port())
	if t.Server, err = Create(ctx, spec.Server.Role, spec.Server.Link); err != nil {
		return t, fmt.Errorf("server: %w", err)
	}
	t.server = Config{
		PrivateKey: serverPriv,
		ListenPort: port,
		Peer:       Peer{PublicKey: t.ClientKey, AllowedIP: spec.Client.Link.Addr.Addr()},
	}
	if err := t.Server.Configure(ctx, t.server); err != nil {
		return t, fmt.Errorf("server: %w", err)
	}
	if t.Client, err = Create(ctx, spec.Client.Role, spec.Client.Link); err != nil {
		return t, fmt.Errorf("client: %w", err)
	}
	if err := t.Client.Configure(ctx, Config{
		PrivateKey: clientPriv,
		Peer: Peer{PublicKey: t.ServerKey, Endpoint: spec.Endpoint, Keepalive: spec.Keepalive,
			AllowedIP: spec.Server.Link.Addr.Addr()},
	}); err != nil {
		return t, fmt.Errorf("client: %w", err)
	}
	if err := t.Client.WaitHandshake(ctx, t.ServerKey); err != nil {
		return t, fmt.Errorf("client: %w", err)
	}
	return t, nil
}

// Close removes the client's device, then the server's. Safe to call twice.
func (t *Tunnel) Close() error {
	return errors.Join(t.Client.Close(), t.Server.Close())
}

// StopServer removes the server's device, as a restart of the server
// begins: wireguard-go stopped (its TUN and socket go with it), or the
// kernel's link deleted. The client's device keeps its peer and its
// session with the old server.
func (t *Tunnel) StopServer() error { return t.Server.Close() }

// StartServer makes the server's device again as Up made it: the same
// link (name, implementation, MTU, address), then the same private key,
// port and peer. Like a WireGuard server restarted from its configuration
// file, it knows no endpoint of its peer until the client's next
// handshake initiation arrives: the new device cannot read the client's
// packets of the old session, and the client initiates again only when
// those went unanswered (Keepalive-Timeout + Rekey-Timeout, 15 s).
func (t *Tunnel) StartServer(ctx context.Context) error {
	d, err := Create(ctx, t.Server.Role, t.Server.Link)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := d.Configure(ctx, t.server); err != nil {
		return errors.Join(fmt.Errorf("server: %w", err), d.Close())
	}
	t.Server = d
	return nil
}

// Transfer is one side's view of its peer.
type Transfer struct {
	Name          string // the interface
	MTU           int
	Peer          wgtypes.Key
	RxBytes       int64
	TxBytes       int64
	LastHandshake time.Time
}

// Transfer reads a side's MTU and its peer's counters, for a path's
// diagnosis, which takes no context (transport.Path.Diagnose).
func (d *Device) Transfer() (Transfer, error) {
	tr := Transfer{Name: d.Name}
	st, err := d.state(context.Background())
	if err != nil {
		return tr, fmt.Errorf("wireguard %s: read state: %w", d.Name, err)
	}
	tr.MTU = st.MTU
	if len(st.Peers) != 1 {
		return tr, fmt.Errorf("wireguard %s: %d peers, want 1", d.Name, len(st.Peers))
	}
	p := st.Peers[0]
	tr.Peer, tr.RxBytes, tr.TxBytes, tr.LastHandshake = p.PublicKey, p.RxBytes, p.TxBytes, p.LastHandshake
	return tr, nil
}

// hostNet is addr as a single-host network (/32 or /128).
func hostNet(addr netip.Addr) *net.IPNet {
	return ipNet(netip.PrefixFrom(addr, addr.BitLen()))
}
