package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/relay"
)

var _ Fanner = (*TW)(nil)

// FanUp for tw: one relay (Caddy, Xray, sshd) and one tw server, and a
// tw client per client role, all as the one bench user, whose maps give
// client i its own port: local FanPort(i) to the server's FanPort(i).
// The user is provisioned once (tw's offline flow, in the first client)
// and its exported context imported in every other client. A client is
// ready when an SSH handshake with the server's sshd passes through its
// tunnel.
func (t *TW) FanUp(ctx context.Context, tb *Testbed, clients []string, ports []int) (*Fan, error) {
	b, err := t.resolve()
	if err != nil {
		return nil, err
	}
	u := &twUp{tb: tb, bins: b, sub: t.subDir()}
	for _, p := range ports {
		u.extra = append(u.extra, [2]int{p, p})
	}
	var conns []*proc.Process
	f := &Fan{Label: "tw: one relay and one tw server, a tw client per client", Server: "tw server start",
		Relay: "Caddy, Xray and sshd", Close: func() error {
			for i, j := 0, len(conns)-1; i < j; i, j = i+1, j-1 {
				conns[i], conns[j] = conns[j], conns[i]
			}
			err := errors.Join(stopAll(conns...), u.close())
			conns = nil
			return err
		}}
	fail := func(err error) (*Fan, error) { return nil, errors.Join(fmt.Errorf("tw: %w", err), f.Close()) }
	if err := u.newPKI(ctx); err != nil {
		return fail(err)
	}
	e, err := t.enrolment(ctx, u)
	if err != nil {
		return fail(err)
	}
	for _, name := range clients[1:] {
		if err := u.importIn(ctx, name); err != nil {
			return fail(fmt.Errorf("%s: %w", name, err))
		}
	}
	u.relay, err = relay.Start(ctx, relay.Config{Domain: twRelayHost, Dir: u.dir(topology.Relay), SSHUser: twRelayUser,
		Tenant: e.tenant, LeafCert: u.pki.leafCert, LeafKey: u.pki.leafKey, HostKey: e.hostKey,
	}, relay.Bins{Caddy: tb.ProgramAt(topology.Relay, b.caddy), Xray: tb.ProgramAt(topology.Relay, b.xray), SSHD: b.sshd}, roleLauncher{tb, topology.Relay})
	if err != nil {
		return fail(err)
	}
	if err := u.startServer(ctx); err != nil {
		return fail(err)
	}
	for i, name := range clients {
		p, err := u.startClientIn(ctx, name)
		if p != nil {
			conns = append(conns, p)
		}
		if err != nil {
			return fail(fmt.Errorf("%s: %w", name, err))
		}
		f.Targets = append(f.Targets, net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])))
	}
	return f, nil
}

// importIn gives client role name tw's directories and the run's CA, and
// imports there the bench user's context that provisioning exported to
// the first client.
func (u *twUp) importIn(ctx context.Context, name string) error {
	r, first := u.tb.Roles[name], u.tb.Roles[topology.Client]
	for _, d := range []string{"config", "home", "work"} {
		if err := role.MkdirAll(ctx, r, filepath.Join(u.dir(name), d), 0o700); err != nil {
			return err
		}
	}
	if err := role.MkdirAll(ctx, r, u.certDir(name), 0o755); err != nil {
		return err
	}
	if _, err := copyFrom(ctx, first, r, u.sub, filepath.Join(u.dir(topology.Client), u.pki.caCert)); err != nil {
		return fmt.Errorf("run CA: %w", err)
	}
	bundle := BenchUser + "-tw-context.twctx"
	if _, err := copyFrom(ctx, first, r, filepath.Join(u.sub, "work"), filepath.Join(u.workDir(topology.Client), bundle)); err != nil {
		return fmt.Errorf("user context: %w", err)
	}
	return u.tw(ctx, name, "import", "config", "import", filepath.Join(u.workDir(name), bundle), "--activate")
}
