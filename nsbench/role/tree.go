package role

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// Tree is a run's cgroup, parent of one cgroup per role:
//
//	<root>/<prefix>/<role>/base         the role's fixtures and tools
//	<root>/<prefix>/<role>/t-<name>     a transport's own processes (Leaf)
//	<root>/<prefix>/<name>              a part beside the roles (Beside)
//
// Every process lives in a leaf, so that the memory controller can be
// turned on where the host delegates it. A role's CPU is its directory's,
// children included, as the reference counts it.
type Tree struct {
	root, prefix string
}

// NewTree is the cgroup tree of the run named prefix under the cgroup2
// mount root. It creates nothing.
func NewTree(root, prefix string) *Tree { return &Tree{root: root, prefix: prefix} }

// Dir is the run's cgroup.
func (t *Tree) Dir() string { return filepath.Join(t.root, t.prefix) }

// Name is the run's cgroup as /proc/PID/cgroup names it: "/twnsb-3fa9c1".
func (t *Tree) Name() string { return "/" + t.prefix }

// PrivateDirMode is the mode of a run's private directories and of each
// role's: other users may not list them nor write there, and may only pass
// through, as the bench account must to its home and to the scp payload.
// Directories holding keys inside are 0700.
const PrivateDirMode = 0o711

// Dirs are where a host keeps a run's files.
type Dirs struct {
	Log     string // the programs' logs
	Private string // the run's private directory: each role gets its own inside
}

// Roles creates the run's cgroup and one per role of topo with its base
// leaf, and each role's private directory, and returns the roles, their
// processes in the base leaf.
func (t *Tree) Roles(topo *topology.Topology, dirs Dirs) (map[string]*Role, error) {
	roles := map[string]*Role{}
	self, err := os.Executable()
	if err != nil {
		return roles, fmt.Errorf("roles: find own binary: %w", err)
	}
	run, err := proc.NewCgroup(t.Dir())
	if err != nil {
		return roles, err
	}
	if err := run.MarkOwner(os.Getpid()); err != nil {
		return roles, err
	}
	memory := run.EnableMemory()
	for _, name := range topo.Spec.Roles {
		dir, err := proc.NewCgroup(filepath.Join(run.Path, name))
		if err != nil {
			return roles, err
		}
		if memory {
			dir.EnableMemory()
		}
		base, err := proc.NewCgroup(filepath.Join(dir.Path, "base"))
		if err != nil {
			return roles, err
		}
		private := filepath.Join(dirs.Private, name)
		if err := os.MkdirAll(private, PrivateDirMode); err != nil {
			return roles, fmt.Errorf("%s: private directory: %w", name, err)
		}
		r := topo.Roles[name]
		roles[name] = &Role{name: name, netns: r.NS.Name, addr: r.Addr, hosts: topo.HostsFile(name), dir: dir, at: where{leaf: base},
			logDir: dirs.Log, private: private, self: self, host: nsHost{r.NS}}
	}
	return roles, nil
}

// ForTransport is roles with each one's processes in the transport's own
// leaf (made on each role's host).
func ForTransport(ctx context.Context, roles map[string]*Role, transport string) (map[string]*Role, error) {
	out := map[string]*Role{}
	for name, r := range roles {
		l, err := r.Leaf(ctx, "t-"+transport)
		if err != nil {
			return out, err
		}
		out[name] = l
	}
	return out, nil
}

// Beside creates the cgroup name beside the roles' (the WAN forwarder's).
func (t *Tree) Beside(name string) (*proc.Cgroup, error) {
	return proc.NewCgroup(filepath.Join(t.Dir(), name))
}

// Usage is the CPU the whole run's cgroup has used (µs).
func (t *Tree) Usage() (uint64, error) { return (&proc.Cgroup{Path: t.Dir()}).UsageUsec() }

// Remove kills what is left in the run's cgroups and removes them. Safe to
// call twice, and on a tree a crashed run left.
func (t *Tree) Remove(ctx context.Context) error {
	dir := t.Dir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove cgroups: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, (&proc.Cgroup{Path: filepath.Join(dir, e.Name())}).Remove(ctx))
		}
	}
	errs = append(errs, (&proc.Cgroup{Path: dir}).Remove(ctx))
	return errors.Join(errs...)
}
