package role

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Op is work done inside a role's network namespace (a netlink change, a
// counter read, a socket held open), named so that the twnsbench copy on
// the role's host can carry it out when the role lives on another host.
//
// Its argument and its result always cross as JSON, on this host too: an
// Op whose values would not survive the trip to another host fails here
// first, in every test. So A and R are plain data (exported fields, no
// funcs, channels or handles), and what the caller must tell apart is in
// R, never in the error's type: an error crosses as its text.
//
// Ops are declared once, at package level, with NewOp: the registry is
// how the copy on another host finds the code for a name.
type Op[A, R any] struct {
	name string
	fn   func(context.Context, A) (R, error)
}

// handler is an Op with its types erased: JSON in, JSON out.
type handler func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)

var (
	opsMu sync.RWMutex
	ops   = map[string]handler{}
	// hostOps may run in the host's own namespace (building a role's
	// namespace, reading the host's facts); every other op runs only in a
	// role's, so no request can change the host's links.
	hostOps = map[string]bool{}
)

// NewOp registers fn under name, unique across the program ("ipsec.xfrm-
// states"), and returns the Op that carries it out in a role. It panics
// on a name registered twice: two ops under one name would send the other
// host's copy the wrong code.
func NewOp[A, R any](name string, fn func(context.Context, A) (R, error)) *Op[A, R] {
	return newOp(name, false, fn)
}

// NewHostOp registers an op that runs in the role host's own namespace,
// not a role's: it builds what a role stands on there (its namespace on
// the host's interface) or reads the host's facts. It must create only
// what carries the run's prefix and change nothing of the host's own.
func NewHostOp[A, R any](name string, fn func(context.Context, A) (R, error)) *HostOp[A, R] {
	return &HostOp[A, R]{op: newOp(name, true, fn)}
}

// HostOp is an op carried out in a host's own namespace (NewHostOp).
type HostOp[A, R any] struct{ op *Op[A, R] }

func newOp[A, R any](name string, host bool, fn func(context.Context, A) (R, error)) *Op[A, R] {
	opsMu.Lock()
	defer opsMu.Unlock()
	if _, dup := ops[name]; dup {
		panic("role: op " + name + " registered twice")
	}
	hostOps[name] = host
	ops[name] = func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var a A
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("%s: decode argument: %w", name, err)
		}
		r, err := fn(ctx, a)
		if err != nil {
			return nil, err
		}
		out, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("%s: encode result: %w", name, err)
		}
		return out, nil
	}
	return &Op[A, R]{name: name, fn: fn}
}

// Name is the op's registered name.
func (o *Op[A, R]) Name() string { return o.name }

// Serve carries out the op registered as name with its JSON argument in
// the calling thread's namespace: the code a role's host runs for a
// request. The caller has entered the role's namespace, or for a host op
// (inHost) stays in the host's own.
func Serve(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return serve(ctx, name, false, args)
}

func serve(ctx context.Context, name string, inHost bool, args json.RawMessage) (json.RawMessage, error) {
	opsMu.RLock()
	h, ok := ops[name]
	host := hostOps[name]
	opsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("no op %q in this twnsbench (a different version on the role's host?)", name)
	}
	if host != inHost {
		if inHost {
			return nil, fmt.Errorf("op %s runs only in a role's namespace, never in the host's", name)
		}
		return nil, fmt.Errorf("op %s runs only in the host's own namespace", name)
	}
	return h(ctx, args)
}

// Ops lists the registered ops' names, sorted.
func Ops() []string {
	opsMu.RLock()
	defer opsMu.RUnlock()
	names := make([]string, 0, len(ops))
	for n := range ops {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Nothing is the argument or result of an op that takes or returns none.
type Nothing struct{}
