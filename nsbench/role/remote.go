package role

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// A role on another host: the copy there builds its namespace on the
// host's interface (topology.UpOnLink) and its cgroups, under the scope
// the orchestrator names — the run's prefix and the role, so that two
// "hosts" sharing one filesystem (an emulated test) never touch each
// other's — and hands back what the orchestrator needs to reach it.

// RoleOnHost is what a host needs to build one role of a run.
type RoleOnHost struct {
	Link topology.LinkSpec
	Dirs Dirs // on that host
}

// HostedRole is a role a host built: how to reach it over the wire.
type HostedRole struct {
	Name   string
	NetNS  string
	Addr   netip.Addr
	Hosts  string // its hosts file
	Cgroup string // its cgroup
	Leaf   string // its base leaf
	LogDir string
	Dir    string // its private directory
	Self   string // twnsbench on that host
	// Facts of the role's link as built, for the Environment.
	topology.LinkFacts
}

// Scope is what everything of role in run prefix is named with on its
// host: what the copy there removes when its session ends.
func Scope(prefix, role string) string { return prefix + "-" + role }

// role refuses to build a role other than the agent's, or with its files
// outside the run's directories.
func (b *Bounds) role(a RoleOnHost) error {
	if b == nil {
		return nil
	}
	if s := Scope(a.Link.Spec.Prefix, a.Link.Role); s != b.Scope {
		return fmt.Errorf("build %s: this agent serves %s only", s, b.Scope)
	}
	paths := []string{a.Dirs.Log, a.Dirs.Private}
	if a.Link.HostsFile != "" { // "": the default, /etc/netns/<its namespace>/hosts
		paths = append(paths, a.Link.HostsFile)
	}
	for _, p := range paths {
		if !within(p, b.Dirs...) {
			return fmt.Errorf("build %s: %s is outside the run's directories", b.Scope, p)
		}
	}
	return nil
}

var buildRoleOp = NewHostOp("host.build-role", func(ctx context.Context, a RoleOnHost) (HostedRole, error) {
	if err := boundsOf(ctx).role(a); err != nil {
		return HostedRole{}, err
	}
	if err := os.MkdirAll(a.Dirs.Log, 0o755); err != nil {
		return HostedRole{}, fmt.Errorf("log directory: %w", err)
	}
	topo, err := topology.UpOnLink(a.Link)
	if err != nil {
		return HostedRole{}, err
	}
	defer topo.Release()
	root, err := proc.Cgroup2Root()
	if err != nil {
		return HostedRole{}, err
	}
	roles, err := NewTree(root, Scope(a.Link.Spec.Prefix, a.Link.Role)).Roles(topo, a.Dirs)
	if err != nil {
		return HostedRole{}, err
	}
	return hosted(roles[a.Link.Role], topo.LinkFacts), nil
})

// hostNoiseOp reads its host's work besides the run: the argument is the
// run's prefix, which must be the agent's own run.
var hostNoiseOp = NewHostOp("host.noise", func(ctx context.Context, prefix string) (metrics.HostReading, error) {
	ownRun := len(prefix) > len(topology.Prefix) && strings.HasPrefix(prefix, topology.Prefix) && !strings.Contains(prefix, "/")
	if b := boundsOf(ctx); !ownRun || b != nil && !strings.HasPrefix(b.Scope, prefix+"-") {
		return metrics.HostReading{}, fmt.Errorf("noise of run %q: not this agent's run", prefix)
	}
	return metrics.ReadHostNoise(prefix)
})

// HostNoise reads the work besides run prefix of the host at the far end
// of c (metrics.ReadHostNoise, its agent left out).
func HostNoise(ctx context.Context, c *Wire, prefix string) (metrics.HostReading, error) {
	return hostNoiseOp.On(ctx, c, prefix)
}

// BuildRole has machine m build one role of a run on its interface (a
// host through its agent, which removes it when its session ends), and
// returns the role with its work carried out there.
func BuildRole(ctx context.Context, m Machine, a RoleOnHost) (*Role, HostedRole, error) {
	h, err := buildRoleOp.On(ctx, m, a)
	if err != nil {
		return nil, h, fmt.Errorf("build %s: %w", a.Link.Role, err)
	}
	r, err := builtRole(m, h)
	return r, h, err
}

// RolesOnSwitch is what a machine needs to build every role of a run on
// one switch of its own (topology.Up): a run on one host.
type RolesOnSwitch struct {
	Spec topology.Spec
	Dirs Dirs
}

// SwitchBuilt is what a machine built on its switch: the roles, in the
// spec's order, and the facts of their links.
type SwitchBuilt struct {
	Roles []HostedRole
	topology.LinkFacts
}

var buildSwitchOp = NewHostOp("host.build-switch", func(ctx context.Context, a RolesOnSwitch) (SwitchBuilt, error) {
	if err := os.MkdirAll(a.Dirs.Log, 0o755); err != nil {
		return SwitchBuilt{}, fmt.Errorf("log directory: %w", err)
	}
	topo, err := topology.Up(a.Spec)
	if err != nil {
		return SwitchBuilt{}, fmt.Errorf("topology: %w", err)
	}
	defer topo.Release()
	root, err := proc.Cgroup2Root()
	if err != nil {
		return SwitchBuilt{}, err
	}
	roles, err := NewTree(root, a.Spec.Prefix).Roles(topo, a.Dirs)
	if err != nil {
		return SwitchBuilt{}, err
	}
	b := SwitchBuilt{LinkFacts: topo.LinkFacts}
	for _, name := range a.Spec.Roles {
		b.Roles = append(b.Roles, hosted(roles[name], topology.LinkFacts{}))
	}
	return b, nil
})

// BuildSwitch has machine m build every role of a run on one switch of
// its own, and returns the roles, their work carried out on m. The
// caller removes them (topology.Clean and the run's Tree) when the run
// ends, and releases the roles' handles (Release).
func BuildSwitch(ctx context.Context, m Machine, a RolesOnSwitch) (map[string]*Role, SwitchBuilt, error) {
	b, err := buildSwitchOp.On(ctx, m, a)
	if err != nil {
		return nil, b, err
	}
	roles := map[string]*Role{}
	for _, h := range b.Roles {
		r, err := builtRole(m, h)
		if err != nil {
			return roles, b, err
		}
		roles[h.Name] = r
	}
	return roles, b, nil
}

// hosted is r as the machine that built it hands it back.
func hosted(r *Role, links topology.LinkFacts) HostedRole {
	return HostedRole{Name: r.name, NetNS: r.netns, Addr: r.addr, Hosts: r.hosts, Cgroup: r.dir.Path, Leaf: r.at.leaf.Path,
		LogDir: r.logDir, Dir: r.private, Self: r.self, LinkFacts: links}
}

// builtRole is the role machine m built and handed back as h.
func builtRole(m Machine, h HostedRole) (*Role, error) {
	on, err := m.roleHost(h.NetNS)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.Name, err)
	}
	return &Role{name: h.Name, netns: h.NetNS, addr: h.Addr, hosts: h.Hosts, dir: &proc.Cgroup{Path: h.Cgroup},
		at: where{leaf: &proc.Cgroup{Path: h.Leaf}}, logDir: h.LogDir, private: h.Dir, self: h.Self, host: on}, nil
}

// socketBufferMaxOp reads net.core.rmem_max or wmem_max as the machine's
// initial network namespace shows it, the only place an older kernel
// (Debian 12's 6.1) shows them, where they hold for every namespace: the
// agent's own namespace on a host, else PID 1's (an emulated machine is a
// namespace of this kernel). Never the orchestrator's for a role
// elsewhere.
var socketBufferMaxOp = NewHostOp("host.socket-buffer-max", func(_ context.Context, key string) ([]byte, error) {
	if key != "rmem_max" && key != "wmem_max" {
		return nil, fmt.Errorf("net.core.%s: not a socket buffer limit", key)
	}
	path := "/proc/sys/net/core/" + key
	b, err := os.ReadFile(path)
	if !errors.Is(err, os.ErrNotExist) {
		return b, err
	}
	initial, err := ns.OpenInitial()
	if err != nil {
		return nil, err
	}
	defer initial.Close()
	err = initial.Do(func() (err error) {
		b, err = os.ReadFile(path)
		return err
	})
	return b, err
})

// SocketBufferMax reads net.core.rmem_max or wmem_max (key) on machine m
// as its initial network namespace shows it.
func SocketBufferMax(ctx context.Context, m Machine, key string) ([]byte, error) {
	return socketBufferMaxOp.On(ctx, m, key)
}
