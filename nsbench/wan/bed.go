package wan

import (
	"context"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// Bed is what the WAN needs of a testbed: its roles, its teardown, and on
// one host the switch that the userspace forwarder takes the bridge's
// place on. The caller owns the testbed; the WAN only pushes its undos.
type Bed struct {
	Roles map[string]*role.Role // every role, by name
	// OnTeardown pushes an undo onto the testbed's teardown stack.
	OnTeardown func(name string, undo func(context.Context) error)
	Logf       func(format string, args ...any)
	// Egress are the roles whose eth0 egress netem impairs: the client's
	// and the server's, or a sweep's clients' and the server's.
	Egress []string
	// Meters are the testbed's CPU readers by cgroup, read around each
	// sample: the userspace impairment adds its own (ImpairCgroup) and,
	// across hosts, takes its leaf out of the client's and the server's.
	// Nil where no sample is metered (a sweep's testbed).
	Meters map[string]func() (uint64, error)
	// Switch is the switch the roles are joined by on this host; nil when
	// the roles stand on their own hosts.
	Switch *Switch
}

// Switch is a testbed's switch on this host, as the forwarder needs it.
type Switch struct {
	Spec   *topology.Spec // the switch's, once built
	Tree   *role.Tree     // the run's cgroups: the forwarder's is beside the roles'
	Dir    string         // the testbed's private directory (the control socket)
	LogDir string         // where the forwarder's log goes
}

// Recorder is where the WAN's set-up states what it chose, in the results
// document's env block.
type Recorder interface {
	// Seed is the loss seed the conditions share.
	Seed(seed uint64)
	// Impairment is the method, its description, and the seed when the
	// method draws its losses from it (nil for netem).
	Impairment(method, description string, seed *uint64)
	// Fallback names a fallback the set-up took.
	Fallback(what string)
}

// ImpairCgroup is the forwarder's cgroup under the run's, beside the
// roles': its CPU is recorded per sample as container_cpu_sec.impair.
const ImpairCgroup = "impair"

// netemTargets are the egresses netem impairs: the eth0 of each of b's
// Egress roles.
func netemTargets(b Bed) []impair.Target {
	var ts []impair.Target
	for _, name := range b.Egress {
		ts = append(ts, impair.Target{Role: b.Roles[name], Link: topology.RoleLink})
	}
	return ts
}
