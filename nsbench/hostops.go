package nsbench

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// doctor and clean on another host are ops its agent serves (the same
// agent a run's role is built by): typed values cross the wire, never a
// command's printed output.

// DoctorRequest is what doctor checks on a host.
type DoctorRequest struct {
	Preflight preflight.Options
	// Transports are the transports' options given on the command line;
	// the others keep their defaults on the host checked.
	Transports map[string]string
}

// Doctor is what doctor found on a host: its kernel, its checks, and
// whether each registered transport can run there (a check named
// "transport NAME", never required: a run skips it, or refuses it when
// it is named).
type Doctor struct {
	Kernel string // uname release
	preflight.Report
	Transports []preflight.Check
}

// CheckHost is doctor on this host, in the calling thread's namespace. It
// creates and changes nothing. Beside the request's own, it checks the
// kernel features the registered transports use where present.
func CheckHost(req DoctorRequest) Doctor {
	checks, built := CheckTransports(req.Transports)
	pre := req.Preflight
	pre.Kernel = append(slices.Clone(pre.Kernel), transport.KernelUses(built)...)
	return Doctor{Kernel: preflight.KernelRelease(), Report: preflight.Run(pre), Transports: checks}
}

// CheckTransports checks whether each registered transport can run here
// with the options given (topts; the others at their defaults), saying
// why not where it cannot, and returns those it could build.
func CheckTransports(topts map[string]string) ([]preflight.Check, []transport.Transport) {
	var checks []preflight.Check
	var built []transport.Transport
	for _, s := range transport.Registered() {
		c := preflight.Check{Name: "transport " + s.Name, Detail: s.Summary, OK: true}
		ts, err := transport.Build([]string{s.Name}, topts)
		if err == nil {
			built = append(built, ts[0])
			err = ts[0].Check()
		}
		if err != nil {
			c.OK, c.Detail = false, err.Error()
		}
		checks = append(checks, c)
	}
	return checks, built
}

var hostDoctorOp = role.NewHostOp("host.doctor", func(_ context.Context, req DoctorRequest) (Doctor, error) {
	return CheckHost(req), nil
})

// DoctorOn is doctor on the host at the far end of w (its agent).
func DoctorOn(ctx context.Context, w *role.Wire, req DoctorRequest) (Doctor, error) {
	return hostDoctorOp.On(ctx, w, req)
}

// cleanReply carries what clean did and, apart, what it could not: an
// op's error would drop what was removed.
type cleanReply struct {
	Report CleanReport
	Failed string
}

// hostCleanOp is clean on the agent's host: it removes what Clean
// removes there (things named with twnsbench's prefix, of runs whose
// harness is gone, or of every run with force) except the agent's own
// run, which the agent removes itself when its session ends.
var hostCleanOp = role.NewHostOp("host.clean", func(ctx context.Context, force bool) (cleanReply, error) {
	own := role.ServingScope(ctx)
	if i := strings.LastIndexByte(own, '-'); i > 0 {
		own = own[:i] // the run's prefix (role.Scope)
	}
	rep, err := clean(ctx, force, own)
	r := cleanReply{Report: rep}
	if err != nil {
		r.Failed = err.Error()
	}
	return r, nil
})

// CleanOn is clean on the host at the far end of w (its agent), force
// as Clean's. The report holds what was done even with an error.
func CleanOn(ctx context.Context, w *role.Wire, force bool) (CleanReport, error) {
	r, err := hostCleanOp.On(ctx, w, force)
	if err != nil {
		return CleanReport{}, err
	}
	if r.Failed != "" {
		return r.Report, errors.New(r.Failed)
	}
	return r.Report, nil
}
