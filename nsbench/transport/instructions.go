package transport

import (
	"context"
	"fmt"

	"github.com/twnsbench/twnsbench/nsbench/callgrind"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
)

// InstructionCounter counts the instructions a tunnel's own daemon
// executes between Start and Stop: the tunnel's cost as a count, which
// does not change with the host's other load as its CPU time does.
type InstructionCounter interface {
	// Start zeroes the count and starts counting.
	Start(ctx context.Context) error
	// Stop stops counting and returns the count since Start, with the
	// bytes the daemon's tunnel device sent meanwhile.
	Stop(ctx context.Context) (Instructions, error)
}

// Instructions are one sample's count (callgrind.Counts) and the bytes
// the counted daemon's device sent into the tunnel: the daemon
// encrypted and sent those, retransmissions included.
type Instructions struct {
	callgrind.Counts
	SentBytes uint64
	Method    string
}

// daemonCounter counts a daemon started under callgrind.Argv in role r,
// whose tunnel device is link.
type daemonCounter struct {
	c    *callgrind.Counter
	r    *role.Role
	link string
	tx0  uint64
}

var _ InstructionCounter = (*daemonCounter)(nil)

// countable says why a daemon of tb's role cannot be counted, "" when it
// can: valgrind runs it on this host only, where the dumps are read.
func countable(tb *Testbed) string {
	if tb.Copies != nil {
		return "instructions are counted on one host only (valgrind's dumps are read where twnsbench runs)"
	}
	for _, p := range []string{callgrind.Program, callgrind.Control} {
		if _, err := proc.LookPath(p); err != nil {
			return "instructions not counted: no " + p + " (valgrind's package)"
		}
	}
	return ""
}

// newDaemonCounter counts p, started under callgrind.Argv(out, …) in role
// r, its device link; prefixes name its packet path's functions.
func newDaemonCounter(r *role.Role, p *proc.Process, out, link string, prefixes []string) *daemonCounter {
	run := func(ctx context.Context, name string, args ...string) ([]byte, error) {
		res, err := r.Run(ctx, name, args...)
		return append(res.Stdout, res.Stderr...), err
	}
	return &daemonCounter{c: &callgrind.Counter{Run: run, PID: p.PID(), Out: out, PathPrefixes: prefixes}, r: r, link: link}
}

func (d *daemonCounter) Start(ctx context.Context) error {
	if err := d.c.Start(ctx); err != nil {
		return err
	}
	c, err := role.LinkBytes(ctx, d.r, d.link)
	if err != nil {
		return fmt.Errorf("tunnel device's bytes: %w", err)
	}
	d.tx0 = c.Tx
	return nil
}

func (d *daemonCounter) Stop(ctx context.Context) (Instructions, error) {
	c, err := role.LinkBytes(ctx, d.r, d.link)
	if err != nil {
		return Instructions{}, fmt.Errorf("tunnel device's bytes: %w", err)
	}
	n, err := d.c.Stop(ctx)
	if err != nil {
		return Instructions{}, err
	}
	return Instructions{Counts: n, SentBytes: c.Tx - d.tx0, Method: callgrind.Method}, nil
}
