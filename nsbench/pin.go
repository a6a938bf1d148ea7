package nsbench

import (
	"fmt"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// The --pin layouts: which CPUs the roles' processes run on. On a small
// VM where the scheduler puts a client and its server (same CPU or not)
// moves a request-response rate by a factor of 2–4, run to run.
const (
	PinOff   = "off"   // where the scheduler puts them (the default)
	PinSame  = "same"  // every role on the run's first CPU
	PinSplit = "split" // the clients on the run's first CPU, the server and the relay on its second
)

// pinLayout is a --pin layout resolved to CPUs: the run's first and
// second CPUs are the first two of the harness's affinity, so a run
// started under taskset stays within it.
type pinLayout struct {
	name          string
	client, other []int
}

// newPinLayout resolves layout against allowed, the CPUs the run may use
// in order; a zero pinLayout for off. A layout needing more CPUs than
// allowed has is refused.
func newPinLayout(layout string, allowed []int) (pinLayout, error) {
	need := map[string]int{PinSame: 1, PinSplit: 2}
	switch layout {
	case "", PinOff:
		return pinLayout{}, nil
	case PinSame, PinSplit:
	default:
		return pinLayout{}, fmt.Errorf("--pin %q: want off, same (every role on one CPU) or split (the client on one CPU, the server and the relay on another)", layout)
	}
	if n := need[layout]; len(allowed) < n {
		return pinLayout{}, fmt.Errorf("--pin %s: needs %d CPUs, the run may use %d (%s)", layout, n, len(allowed), metrics.FormatCPUList(allowed))
	}
	p := pinLayout{name: layout, client: allowed[:1], other: allowed[:1]}
	if layout == PinSplit {
		p.other = allowed[1:2]
	}
	return p, nil
}

// hostPinLayout resolves layout against this host's affinity.
func hostPinLayout(layout string) (pinLayout, error) {
	if layout == "" || layout == PinOff {
		return pinLayout{}, nil
	}
	allowed, err := metrics.AffinityCPUs()
	if err != nil {
		return pinLayout{}, fmt.Errorf("--pin %s: %w", layout, err)
	}
	return newPinLayout(layout, allowed)
}

// cpusOf is the CPUs of the role named name: the client's for every
// client (the many-client sweep's "client2" too).
func (p pinLayout) cpusOf(name string) []int {
	if name == topology.Client || isSweepClient(name) {
		return p.client
	}
	return p.other
}

func isSweepClient(name string) bool {
	rest, ok := strings.CutPrefix(name, topology.Client)
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}

// apply is roles with each kept on its CPUs; roles as they are for off.
func (p pinLayout) apply(roles map[string]*role.Role) map[string]*role.Role {
	if p.name == "" {
		return roles
	}
	out := make(map[string]*role.Role, len(roles))
	for name, r := range roles {
		out[name] = r.OnCPUs(p.cpusOf(name))
	}
	return out
}

// record is the layout as the results state it, for roles; nil for off.
func (p pinLayout) record(roles []string) *results.Pin {
	if p.name == "" {
		return nil
	}
	rec := &results.Pin{Layout: p.name, Roles: map[string]string{}}
	for _, name := range roles {
		rec.Roles[name] = metrics.FormatCPUList(p.cpusOf(name))
	}
	return rec
}
