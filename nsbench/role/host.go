package role

import (
	"context"
	"encoding/json"
	"fmt"

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
	// The machine the role stands on: its host ops.
	Machine
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

// Machine is where host ops are carried out (NewHostOp): this machine
// (Here), the machine at the far end of a Wire, or the machine a role
// stands on (MachineOf). A run reads every machine's facts, noise and
// sysctls through one, so a role on this machine and one on another host
// are described by the same code, and nothing reads this machine's /proc
// for a role that stands elsewhere.
type Machine interface {
	// callHost carries out the host op registered as op in the machine's
	// own namespace.
	callHost(ctx context.Context, op string, args []byte) ([]byte, error)
	// roleHost is where the work of a role whose namespace on the machine
	// is netns is carried out.
	roleHost(netns string) (host, error)
}

// Here is this machine: its host ops run in this process, their argument
// and result still crossing as JSON, as they would over a wire.
var Here Machine = here{}

type here struct{}

func (here) callHost(ctx context.Context, op string, args []byte) ([]byte, error) {
	return serve(ctx, op, true, args)
}

// A role on this machine works through a handle on its namespace.
func (here) roleHost(netns string) (host, error) {
	n, err := ns.Open(netns)
	if err != nil {
		return nil, err
	}
	return nsHost{n}, nil
}

// A role's namespace on this machine: its host ops run in this process.
func (nsHost) callHost(ctx context.Context, op string, args []byte) ([]byte, error) {
	return Here.callHost(ctx, op, args)
}

func (nsHost) roleHost(netns string) (host, error) { return Here.roleHost(netns) }

// On carries the op out on machine m.
func (o *HostOp[A, R]) On(ctx context.Context, m Machine, a A) (R, error) {
	var res R
	raw, err := json.Marshal(a)
	if err != nil {
		return res, fmt.Errorf("%s: encode argument: %w", o.op.name, err)
	}
	out, err := m.callHost(ctx, o.op.name, raw)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, fmt.Errorf("%s: decode result: %w", o.op.name, err)
	}
	return res, nil
}
