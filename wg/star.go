package wg

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// StarSpec is one server device with many clients, each its own peer of
// the server (WireGuard's server of N peers): the server listens on
// Endpoint's port, every client knows it at Endpoint and keeps its path
// alive every Keepalive.
type StarSpec struct {
	Server    End
	Clients   []End
	Endpoint  netip.AddrPort
	Keepalive time.Duration
}

// Star is a built star: the server's device and one device per client,
// each having completed a handshake with the server.
type Star struct {
	Server  *Device
	Clients []*Device
}

// UpStar builds the star in this order: every key, the server's device,
// its configuration (key, port, every client as a peer), then per client
// its device and configuration (key, the server as peer with endpoint and
// keepalive, which sends the first initiation), and then waits until each
// client has completed a handshake. Waiting ends with ctx. On failure it
// removes what it made.
func UpStar(ctx context.Context, spec StarSpec) (s *Star, err error) {
	if len(spec.Clients) == 0 {
		return nil, errors.New("wireguard star: no clients")
	}
	serverPriv, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		return nil, fmt.Errorf("wireguard keys: %w", err)
	}
	privs := make([]wgtypes.Key, len(spec.Clients))
	peers := make([]Peer, len(spec.Clients))
	for i, c := range spec.Clients {
		if privs[i], err = wgtypes.GeneratePrivateKey(); err != nil {
			return nil, fmt.Errorf("wireguard keys: %w", err)
		}
		peers[i] = Peer{PublicKey: privs[i].PublicKey(), AllowedIP: c.Link.Addr.Addr()}
	}
	s = &Star{}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
			s = nil
		}
	}()
	if s.Server, err = Create(ctx, spec.Server.Role, spec.Server.Link); err != nil {
		return s, fmt.Errorf("server: %w", err)
	}
	if err := s.Server.Configure(ctx, Config{PrivateKey: serverPriv, ListenPort: int(spec.Endpoint.Port()),
		Peer: peers[0], More: peers[1:]}); err != nil {
		return s, fmt.Errorf("server: %w", err)
	}
	server := Peer{PublicKey: serverPriv.PublicKey(), Endpoint: spec.Endpoint, Keepalive: spec.Keepalive,
		AllowedIP: spec.Server.Link.Addr.Addr()}
	for i, c := range spec.Clients {
		d, err := Create(ctx, c.Role, c.Link)
		if err != nil {
			return s, fmt.Errorf("%s: %w", c.Role.Name(), err)
		}
		s.Clients = append(s.Clients, d)
		if err := d.Configure(ctx, Config{PrivateKey: privs[i], Peer: server}); err != nil {
			return s, fmt.Errorf("%s: %w", c.Role.Name(), err)
		}
	}
	for _, d := range s.Clients {
		if err := d.WaitHandshake(ctx, server.PublicKey); err != nil {
			return s, fmt.Errorf("%s: %w", d.Role.Name(), err)
		}
	}
	return s, nil
}

// Close removes the clients' devices, newest first, then the server's.
// Safe to call twice and on a partly built star.
func (s *Star) Close() error {
	var errs []error
	for i := len(s.Clients) - 1; i >= 0; i-- {
		errs = append(errs, s.Clients[i].Close())
	}
	return errors.Join(append(errs, s.Server.Close())...)
}
