package transport

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
)

// Piece names a part of a built path that a recovery instrument restarts.
type Piece string

// The pieces a path may let be restarted.
const (
	// PieceServer is the tunnel's server side: the daemon in the server
	// role that the client's end talks to (Pure SSH's sshd, wireguard-go
	// or the kernel's device, openvpn, tw server).
	PieceServer Piece = "server"
	// PieceRelay is the relay between them (tw's Caddy, Xray and sshd).
	PieceRelay Piece = "relay"
)

// Pieces are the pieces in the order the recovery set restarts them.
func Pieces() []Piece { return []Piece{PieceServer, PieceRelay} }

// Restarter is a piece of a built path that can be stopped and started
// again with the same configuration (the same keys, peers, ports and
// files), as an operator's restart of a daemon does. The path stays the
// same path: its client side is not touched.
type Restarter interface {
	// Stop stops the piece and returns once it is gone: no process of it
	// runs and no socket of it listens.
	Stop(ctx context.Context) error
	// Start starts it again as it was and returns once it serves again
	// (listens, or is configured), not once the tunnel carries traffic:
	// that is what a recovery instrument times.
	Start(ctx context.Context) error
	// What says in a few words what a restart stops and starts ("sshd:
	// its listener and every session's processes").
	What() string
}

// Restarts are the pieces of a path that can be restarted, by Piece; a
// path without one has none (its restart instruments are not
// applicable).
type Restarts map[Piece]Restarter

// restartable is one process of a path started from spec in role r, restarted
// by stopping it and starting spec again; with addr set, Start waits until
// addr accepts TCP as r sees it. With tree set, Stop also ends the
// processes the daemon forked that left its process group (sshd's
// per-connection processes, each its own session): a full stop of the
// daemon, not of its listener alone.
type restartable struct {
	r    *role.Role
	spec proc.Program
	addr string
	p    **proc.Process // where the path keeps the running process, for its Close
	tree bool
	what string
}

var _ Restarter = (*restartable)(nil)

func (d *restartable) What() string { return d.what }

func (d *restartable) Stop(ctx context.Context) error {
	p := *d.p
	if p == nil {
		return fmt.Errorf("%s: not running", d.spec.Name)
	}
	stop := func() error { return p.Stop(stopGrace) }
	if !d.tree {
		return stop()
	}
	if err := stopTree(ctx, d.r, []int{p.PID()}, stop); err != nil {
		return fmt.Errorf("%s: %w", d.spec.Name, err)
	}
	return nil
}

// stopTree runs stop, which stops the daemons roots in role r, then ends
// every process they had forked that outlived them (SIGTERM, SIGKILL
// after stopGrace). The forked ones are listed before stop runs: once
// their parents are gone they are reparented and no longer tell whose
// they were.
func stopTree(ctx context.Context, r *role.Role, roots []int, stop func() error) error {
	pids, err := role.PIDs(ctx, r)
	if err != nil {
		return fmt.Errorf("list processes: %w", err)
	}
	forked, err := descendantsOp.On(ctx, r, treeOf{Roots: roots, PIDs: pids})
	if err != nil {
		return fmt.Errorf("list forked processes: %w", err)
	}
	errs := []error{stop()}
	if len(forked) > 0 {
		if _, err := terminateOp.On(ctx, r, forked); err != nil {
			errs = append(errs, fmt.Errorf("end forked processes: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (d *restartable) Start(ctx context.Context) error {
	p, err := d.r.Start(ctx, d.spec)
	if err != nil {
		return fmt.Errorf("%s: start again: %w", d.spec.Name, err)
	}
	*d.p = p
	if d.addr == "" {
		return nil
	}
	if err := d.r.WaitTCP(ctx, d.addr, p); err != nil {
		return fmt.Errorf("%s: started again, not listening on %s (log: %s): %w", d.spec.Name, d.addr, d.spec.Log, err)
	}
	return nil
}

// terminateOp sends SIGTERM to each of ts still running (checked by its
// start time: a PID reused since is never signalled) and waits for them
// to exit, killing after stopGrace those that did not.
var terminateOp = role.NewOp("transport.terminate", func(_ context.Context, ts []task) (role.Nothing, error) {
	for _, t := range ts {
		if _, start, err := procStat(t.PID); err == nil && start == t.Start {
			syscall.Kill(t.PID, syscall.SIGTERM)
		}
	}
	return role.Nothing{}, waitGone(ts)
})
