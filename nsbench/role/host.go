package role

import (
	"context"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// host carries out a role's work where the role's namespace lives: this
// host (nsHost) or another, through the twnsbench copy there (wireHost).
type host interface {
	// call carries out the op registered as op in the role's namespace.
	call(ctx context.Context, op string, args []byte) ([]byte, error)
	// start starts a daemon; ctx bounds the start, not the daemon.
	start(ctx context.Context, p proc.Program) (*proc.Process, error)
	// run runs a program to its end.
	run(ctx context.Context, p proc.Program) (proc.Result, error)
}

// nsHost is a role whose namespace is on this host.
type nsHost struct{ ns *ns.NS }

func (h nsHost) call(ctx context.Context, op string, args []byte) ([]byte, error) {
	var out []byte
	err := h.ns.Do(func() (err error) {
		out, err = Serve(ctx, op, args)
		return err
	})
	return out, err
}

// start starts p as this process's child: at once, so ctx has nothing to
// bound.
func (nsHost) start(_ context.Context, p proc.Program) (*proc.Process, error) { return proc.Start(p) }

func (nsHost) run(ctx context.Context, p proc.Program) (proc.Result, error) { return proc.Run(ctx, p) }
