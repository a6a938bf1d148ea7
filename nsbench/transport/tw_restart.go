package transport

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/relay"
)

// twServer restarts tw server start: stopped, then started again with
// its enrolment, Start waiting for its reverse tunnel on the relay again
// (startServer). tw client connect is left to reconnect by itself.
type twServer struct{ u *twUp }

var _ Restarter = twServer{}

// Stop returns once the relay no longer listens on the old reverse
// tunnel's port (its sshd session ends with the connection), so that
// Start waits for the new one's.
func (s twServer) Stop(ctx context.Context) error {
	if err := stopAll(s.u.server); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, twReadyWait)
	defer cancel()
	return s.u.tb.Roles[topology.Relay].WaitClosed(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(twRemotePort)))
}

func (s twServer) Start(ctx context.Context) error { return s.u.startServer(ctx) }
func (twServer) What() string                      { return "tw server start" }

// twRelay restarts the relay: Caddy, Xray and its sshd stopped, and the
// processes sshd forked for its sessions (the tw server's reverse
// tunnel) ended too, then started again from the same configuration and
// files. The tw server and client are left to reconnect by themselves.
type twRelay struct {
	u    *twUp
	cfg  relay.Config
	bins relay.Bins
}

var _ Restarter = (*twRelay)(nil)

func (r *twRelay) Stop(ctx context.Context) error {
	var roots []int
	for _, p := range r.u.relay.Procs() {
		roots = append(roots, p.PID)
	}
	if err := stopTree(ctx, r.u.tb.Roles[topology.Relay], roots, r.u.relay.Stop); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	return nil
}

func (r *twRelay) Start(ctx context.Context) error {
	rl, err := relay.Start(ctx, r.cfg, r.bins, roleLauncher{r.u.tb, topology.Relay})
	if err != nil {
		return err
	}
	r.u.relay = rl
	return nil
}

func (*twRelay) What() string { return "the relay's Caddy, Xray and sshd" }
