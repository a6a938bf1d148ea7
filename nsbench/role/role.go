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
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// Role is one role of the testbed as the code above this package reaches
// it.
//
// Contract:
//   - Every process of the role starts from Spec (Run and WaitTCP build on
//     it): in the role's network namespace, in the Role's cgroup leaf, with
//     the role's hosts file as /etc/hosts and its output in the run's log
//     directory. A caller never sets a namespace or a cgroup on a spec.
//   - Do runs fn on a thread inside the role's network namespace and
//     nowhere else: a netlink handle, a socket or a /proc/thread-self/net
//     file opened in fn is the role's. Nothing above this package switches
//     namespaces for a role.
//   - Counters are read through the role (CPUUsec, OwnCPUUsec,
//     OwnMemoryPeakKB, RxBytes, UDPStats, OpenTCPConns, ReadFile): each is
//     a cumulative reading, and the caller subtracts.
//   - A Role is immutable and safe for concurrent use; Leaf gives another
//     Role of the same role whose processes go to their own cgroup leaf
//     (a transport's, so they are accounted apart).
//
// Today every role is a network namespace on this host, and its processes
// are this process's children. A role on another host (issue 26) keeps
// this contract with each method carried out by the twnsbench copy on
// that host over its SSH session: processes start there, counters come
// back as numbers. Do and NS hand out the namespace itself and can only
// ever be local: work still done through them (see the README, "How it is
// built") moves behind a method here before it can run on another host.
type Role struct {
	name   string
	ns     *ns.NS
	addr   netip.Addr
	hosts  string       // the file its processes see as /etc/hosts
	dir    *proc.Cgroup // the role's cgroup: its CPU, children included
	leaf   *proc.Cgroup // where this Role's processes go
	logDir string
	rx     func() (uint64, error) // bytes its link received
}

// Name is the role's name ("client").
func (r *Role) Name() string { return r.name }

// Addr is the role's address on the testbed's network.
func (r *Role) Addr() netip.Addr { return r.addr }

// Spec is a launcher spec for program name with argv (argv[0] included)
// in the role, its log file named after the program.
func (r *Role) Program(name string, argv ...string) proc.Program {
	return proc.Program{
		Name:   r.name + "/" + name,
		NetNS:  r.ns.Path(),
		Cgroup: r.leaf,
		Argv:   argv,
		Mounts: []ns.Mount{{Kind: "bind", Source: r.hosts, Target: "/etc/hosts"}},
		Log:    filepath.Join(r.logDir, r.name+"-"+name+".log"),
	}
}

// Run runs program name with its arguments in the role and waits for it.
func (r *Role) Run(ctx context.Context, name string, args ...string) (proc.Result, error) {
	return proc.Run(ctx, r.Program(name, append([]string{name}, args...)...))
}

// WaitTCP waits until addr accepts TCP as seen from the role, or p (when
// not nil) exits.
func (r *Role) WaitTCP(ctx context.Context, addr string, p *proc.Process) error {
	return proc.WaitTCP(ctx, r.ns, addr, p)
}

// Do runs fn on a thread inside the role's network namespace.
func (r *Role) Do(fn func() error) error { return r.ns.Do(fn) }

// ReadFile reads a file as the role sees it: /proc/sys/net and
// /proc/thread-self/net show the role's namespace.
func (r *Role) ReadFile(path string) ([]byte, error) {
	var b []byte
	err := r.ns.Do(func() (err error) {
		b, err = os.ReadFile(path)
		return err
	})
	return b, err
}

// CPUUsec is the CPU the role's whole cgroup has used (µs).
func (r *Role) CPUUsec() (uint64, error) { return r.dir.UsageUsec() }

// OwnCPUUsec is the CPU this Role's leaf has used (µs).
func (r *Role) OwnCPUUsec() (uint64, error) { return r.leaf.UsageUsec() }

// OwnMemoryPeakKB is the leaf's memory.peak, where the kernel keeps it.
func (r *Role) OwnMemoryPeakKB() (int64, bool) { return r.leaf.MemoryPeakKB() }

// RxBytes is the bytes the role's link to the network has received.
func (r *Role) RxBytes() (uint64, error) { return r.rx() }

// UDPStats reads the role's UDP counters.
func (r *Role) UDPStats() (metrics.UDPStats, error) { return metrics.ReadUDPStats(r.ns) }

// OpenTCPConns counts the role's TCP connections to or from local port.
func (r *Role) OpenTCPConns(port int) (int, error) { return metrics.OpenTCPConns(r.ns, port) }

// Leaf is the same role with its processes in the leaf cgroup name beside
// the base one (created here).
func (r *Role) Leaf(name string) (*Role, error) {
	cg, err := proc.NewCgroup(filepath.Join(r.dir.Path, name))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	l := *r
	l.leaf = cg
	return &l, nil
}

// NS is the role's namespace, for the packages not yet behind this seam
// (impair, wg, the transports' own netlink work): see the README's
// "How it is built" for what still reaches a role this way.
func (r *Role) NS() *ns.NS { return r.ns }

// Cgroup is the leaf this Role's processes go to.
func (r *Role) Cgroup() *proc.Cgroup { return r.leaf }
