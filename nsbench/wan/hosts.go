package wan

import (
	"context"
	"fmt"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// The WAN across hosts. Each role stands on its own host behind an edge
// (topology's LinkSpec.Edge: eth0 ⇄ wan0 ⇄ wire0, a pipe between the last
// two): netem goes on eth0 where that host's kernel has it; otherwise, in
// each impaired block, a forwarder on the client's host and one on the
// server's take the pipe's place and delay and drop what their role sends
// (impair.Edges). The RTT probe and the loss probe run between the roles as
// on one host.

// newEdges is the userspace impairment across hosts: a forwarder in an
// "impair" cgroup leaf of the client and of the server on their hosts. Its
// CPU is sampled as container_cpu_sec.impair (both hosts summed) and taken
// out of the role's own figure, so that a role's CPU means what it means
// on one host.
func newEdges(ctx context.Context, b Bed) (*impair.Edges, error) {
	var leaves []*role.Role
	for _, name := range []string{topology.Client, topology.Server} {
		leaf, err := b.Roles[name].Leaf(ctx, ImpairCgroup)
		if err != nil {
			return nil, fmt.Errorf("userspace impairment on the %s's host: %w", name, err)
		}
		leaves = append(leaves, leaf)
		whole, own := b.Meters[name], role.Meter(leaf, role.OwnCPUUsec)
		b.Meters[name] = func() (uint64, error) {
			// The leaf first: it is part of the whole read after it.
			own, err := own()
			if err != nil {
				return 0, err
			}
			all, err := whole()
			return all - min(own, all), err
		}
	}
	b.Meters[ImpairCgroup] = func() (uint64, error) {
		var sum uint64
		for _, l := range leaves {
			u, err := role.Meter(l, role.OwnCPUUsec)()
			if err != nil {
				return 0, err
			}
			sum += u
		}
		return sum, nil
	}
	return impair.NewEdges(leaves, impair.DefaultRTPriority), nil
}

// describeEdges is the env block's description of the userspace
// impairment across hosts.
func describeEdges(settings []string, limit int, seed uint64) string {
	return fmt.Sprintf("userspace impairment on the roles' own hosts (netem: see fallbacks): on the client's host and on the server's, "+
		"twnsbench's AF_PACKET forwarder takes the place of the pipe between the role's eth0 (a veth) and its link to the host's "+
		"interface during each WAN cell; frames the client and the server send get %s, independent random loss each; "+
		"limit %d frames per direction; what arrives from the wire is passed on at once (the sender's host delayed it). "+
		"Loss seed %d (pass --seed %d to repeat the drop positions). Forwarder threads SCHED_FIFO %d; their CPU is "+
		"container_cpu_sec.%s (both hosts summed), not in the roles' own, and counts in the hosts' CPU",
		strings.Join(settings, "; "), limit, seed, seed, impair.DefaultRTPriority, ImpairCgroup)
}
