package transport

import (
	"slices"

	"github.com/twnsbench/twnsbench/nsbench/preflight"
)

// HostNeeder is a transport that asks more of its roles' hosts than the
// harness's own programs (preflight.RoleTools): programs of its own, whose
// versions each host of a role it runs in states with its facts, and
// kernel features it uses where the kernel has them, which the run's
// preflight and doctor check, saying what happens without them. What a
// transport cannot run without is its Check's.
type HostNeeder interface {
	HostNeeds() HostNeeds
}

// HostNeeds is what a HostNeeder asks of its roles' hosts.
type HostNeeds struct {
	Programs []preflight.Tool      // run in every role of RolesOf
	Kernel   []preflight.KernelUse // used where present
}

// ProgramsByRole are the programs ts run of their own, by the roles that
// run them, each once.
func ProgramsByRole(ts []Transport) map[string][]preflight.Tool {
	out := map[string][]preflight.Tool{}
	for _, t := range ts {
		n, ok := t.(HostNeeder)
		if !ok {
			continue
		}
		for _, r := range RolesOf(t) {
			for _, p := range n.HostNeeds().Programs {
				if !slices.ContainsFunc(out[r], func(q preflight.Tool) bool { return q.Name == p.Name }) {
					out[r] = append(out[r], p)
				}
			}
		}
	}
	return out
}

// KernelUses are the kernel features ts use where the kernel has them, in
// ts's order (preflight merges the uses of one check).
func KernelUses(ts []Transport) []preflight.KernelUse {
	var out []preflight.KernelUse
	for _, t := range ts {
		if n, ok := t.(HostNeeder); ok {
			out = append(out, n.HostNeeds().Kernel...)
		}
	}
	return out
}
