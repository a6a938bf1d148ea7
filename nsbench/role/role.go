// Package role is the one place that knows where a role of the testbed
// (client, relay, server) lives: which network namespace its processes
// run in, which cgroup holds them, which hosts file they see, where their
// logs go, and how its counters are read. Everything above it (the
// orchestrator, the transports' launcher) reaches a role through a *Role
// the testbed hands out, never by a namespace or a cgroup path of its
// own.
package role

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// Role is one role of the testbed as the code above this package reaches
// it: who it is (Name, Addr, Dir, Self) and its processes (Program, Start,
// RunProgram, Run, WaitTCP, Leaf). What else is done in a role is a
// function over it taking a context, as every call that may cross a wire
// does: its files (ReadFile, WriteFile, MkdirAll in files.go), its
// counters (CPUUsec, OwnCPUUsec, OwnMemoryPeakKB, PeakRSSKB, PIDs,
// RxBytes, LinkBytes, UDPStats, TCP in counters.go), its loopback
// addresses (AddLoopback, RemoveLoopback) and any other Op (Op.On).
//
// Contract:
//   - Every process of the role starts from Program (Start, Run and
//     WaitTCP build on it): in the role's network namespace, in the Role's
//     cgroup leaf (and on its CPUs, OnCPUs), with the role's hosts file as
//     /etc/hosts and its output in the run's log directory. A caller never sets a namespace or a
//     cgroup on a program.
//   - Work inside the role's network namespace (a netlink change, a socket,
//     a /proc/thread-self/net file) is an Op (op.go) carried out with
//     Op.On: its argument and result cross as JSON, so the same code runs
//     on the role's own host. Nothing above this package switches
//     namespaces for a role, or holds one.
//   - Files the role's processes read are written with WriteFile, and its
//     own files read with ReadFile: on the role's host.
//   - Counters are read through the role: each is a cumulative reading,
//     and the caller subtracts.
//   - A Role is immutable and safe for concurrent use; Leaf gives another
//     Role of the same role whose processes go to their own cgroup leaf
//     (a transport's, so they are accounted apart).
//
// A role is a network namespace on this host, its processes this
// process's children, or one on another host, which keeps this
// contract with ops and Start carried out by the twnsbench copy on that
// host over its SSH session: processes start there, ops run there by name
// (Serve), counters come back as numbers.
type Role struct {
	name   string
	netns  string // its network namespace's name, on its host
	addr   netip.Addr
	hosts  string       // the file its processes see as /etc/hosts
	dir    *proc.Cgroup // the role's cgroup: its CPU, children included
	at     where        // where this Role's processes go
	logDir string
	// private is the role's own directory on its host (keys,
	// configurations, the payload); self is twnsbench there.
	private, self string
	host          host // where its work is carried out
}

// The ops a Role's own methods carry out: WaitTCP's dial, Leaf's cgroup.
var (
	dialOp = NewOp("role.dial-tcp", func(_ context.Context, addr string) (Nothing, error) {
		return Nothing{}, proc.DialTCP(addr)
	})
	newCgroupOp = NewOp("role.new-cgroup", func(ctx context.Context, path string) (Nothing, error) {
		if err := checkCgroup(ctx, path); err != nil {
			return Nothing{}, err
		}
		_, err := proc.NewCgroup(path)
		return Nothing{}, err
	})
)

// On carries the op out in role r with argument a.
func (o *Op[A, R]) On(ctx context.Context, r *Role, a A) (R, error) {
	var res R
	raw, err := json.Marshal(a)
	if err != nil {
		return res, fmt.Errorf("%s: %s: encode argument: %w", r.name, o.name, err)
	}
	out, err := r.host.call(ctx, o.name, raw)
	if err != nil {
		return res, fmt.Errorf("%s: %w", r.name, err)
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, fmt.Errorf("%s: %s: decode result: %w", r.name, o.name, err)
	}
	return res, nil
}

// Release closes r's handle on its namespace, for a role on this machine
// whose namespace is about to go; a role reached over a wire holds none.
func Release(r *Role) error {
	if h, ok := r.host.(nsHost); ok {
		return h.ns.Close()
	}
	return nil
}

// MachineOf is the machine role r stands on: its host ops run there.
func MachineOf(r *Role) Machine { return r.host }

// Name is the role's name ("client").
func (r *Role) Name() string { return r.name }

// Addr is the role's address on the testbed's network.
func (r *Role) Addr() netip.Addr { return r.addr }

// Dir is the role's private directory on its host: where the files its
// programs read go (WriteFile, MkdirAll).
func (r *Role) Dir() string { return r.private }

// Self is the twnsbench binary on the role's host, for the programs that
// are twnsbench itself (the built-in wireguard-go, the WAN probe).
func (r *Role) Self() string { return r.self }

// Program is a program for name with argv (argv[0] included) in the role,
// its log file named after the program.
func (r *Role) Program(name string, argv ...string) proc.Program {
	return proc.Program{
		Name:   r.name + "/" + name,
		NetNS:  filepath.Join(ns.RunDir, r.netns),
		Cgroup: r.at.leaf,
		CPUs:   r.at.cpus,
		Argv:   argv,
		Mounts: []ns.Mount{{Kind: "bind", Source: r.hosts, Target: "/etc/hosts"}},
		Log:    filepath.Join(r.logDir, r.name+"-"+name+".log"),
	}
}

// Start starts p, a program of this role (from Program), as a daemon. ctx
// bounds the start only: the daemon runs until it is stopped or exits.
func (r *Role) Start(ctx context.Context, p proc.Program) (*proc.Process, error) {
	return r.host.start(ctx, p)
}

// RunProgram runs p, a program of this role (from Program), and waits for
// it.
func (r *Role) RunProgram(ctx context.Context, p proc.Program) (proc.Result, error) {
	return r.host.run(ctx, p)
}

// Run runs program name with its arguments in the role and waits for it.
func (r *Role) Run(ctx context.Context, name string, args ...string) (proc.Result, error) {
	// A program given by its path (a build's ssh) logs under its base name.
	return r.RunProgram(ctx, r.Program(filepath.Base(name), append([]string{name}, args...)...))
}

// WaitTCP waits until addr accepts TCP as seen from the role, or p (when
// not nil) exits.
func (r *Role) WaitTCP(ctx context.Context, addr string, p *proc.Process) error {
	return proc.WaitUntil(ctx, fmt.Sprintf("%s from %s", addr, r.name), func() error {
		_, err := dialOp.On(ctx, r, addr)
		return err
	}, p)
}

// WaitClosed waits until addr no longer accepts TCP as seen from the role:
// a listener that a stopped process's connection held (a reverse
// forward on a relay) is gone.
func (r *Role) WaitClosed(ctx context.Context, addr string) error {
	return proc.WaitUntil(ctx, fmt.Sprintf("%s from %s to close", addr, r.name), func() error {
		if _, err := dialOp.On(ctx, r, addr); err == nil {
			return errors.New("still accepts")
		}
		return nil
	}, nil)
}

// Leaf is the same role with its processes in the leaf cgroup name beside
// the base one (created here, on the role's host).
func (r *Role) Leaf(ctx context.Context, name string) (*Role, error) {
	path := filepath.Join(r.dir.Path, name)
	if _, err := newCgroupOp.On(ctx, r, path); err != nil {
		return nil, err
	}
	l := *r
	l.at.leaf = &proc.Cgroup{Path: path}
	return &l, nil
}

// where is where a Role's processes go: the cgroup leaf that accounts
// for them, and the CPUs they may run on (nil: the harness's own), as a
// cpuset cgroup would hold them; the launcher sets them before exec, as
// the roles' cgroups are v2 and a hybrid host's cpuset is v1 only.
type where struct {
	leaf *proc.Cgroup
	cpus []int
}

// OnCPUs is the same role with every process it starts from now on (and
// their threads and children) kept on cpus, on the role's host; nil
// lets them run anywhere the harness may. Its Leafs keep cpus.
func (r *Role) OnCPUs(cpus []int) *Role {
	p := *r
	p.at.cpus = slices.Clone(cpus)
	return &p
}
