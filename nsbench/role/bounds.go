package role

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// Bounds are what an agent's requests may reach on its host: the run's
// own namespace, directories and cgroup, so that a bug in the orchestrator
// (or a request it never meant) cannot reach beyond the run. The agent
// checks every request against them: the namespace a call enters, where a
// program runs, logs and works, and every path an op reads or writes
// (CheckPath, CheckRead).
//
// In the host's own namespace it carries out only the host ops named in
// hostOpsInBounds, each of which checks what it reaches itself.
type Bounds struct {
	// Scope is the run's prefix and the role ("twnsb-3fa9c1-client"): the
	// only role the agent builds and the name of the only namespace it
	// enters.
	Scope string
	// Dirs are the directories files may be read, written and made in,
	// and programs log and work in.
	Dirs []string
	// Cgroup is the cgroup every program and cgroup op stays under.
	Cgroup string
}

type boundsKey struct{}

// withBounds is ctx carrying b to the ops a request runs.
func withBounds(ctx context.Context, b *Bounds) context.Context {
	if b == nil {
		return ctx
	}
	return context.WithValue(ctx, boundsKey{}, b)
}

// boundsOf is the bounds of the request ctx belongs to; nil (no bounds)
// for work this process does for itself.
func boundsOf(ctx context.Context) *Bounds {
	b, _ := ctx.Value(boundsKey{}).(*Bounds)
	return b
}

// ServingScope is the scope of the agent whose request ctx serves
// (Bounds.Scope): what a host op must leave to the agent itself. "" for
// work this process does for itself.
func ServingScope(ctx context.Context) string {
	if b := boundsOf(ctx); b != nil {
		return b.Scope
	}
	return ""
}

// netnsViews are the files that show the namespace an op runs in: reading
// them reads the role's own settings and counters.
var netnsViews = []string{"/proc/sys/net", "/proc/thread-self/net"}

// CheckPath refuses a path an op would write or make outside the run's
// directories, when the op serves an agent's request.
func CheckPath(ctx context.Context, path string) error {
	b := boundsOf(ctx)
	if b == nil || within(path, b.Dirs...) {
		return nil
	}
	return fmt.Errorf("%s is outside the run's directories (%s)", path, strings.Join(b.Dirs, ", "))
}

// CheckRead refuses a path an op would read outside the run's directories
// and the namespace's own views (/proc/sys/net, /proc/thread-self/net).
func CheckRead(ctx context.Context, path string) error {
	if within(path, netnsViews...) {
		return nil
	}
	return CheckPath(ctx, path)
}

// checkCgroup refuses a cgroup outside the run's.
func checkCgroup(ctx context.Context, path string) error {
	b := boundsOf(ctx)
	if b == nil || within(path, b.Cgroup) {
		return nil
	}
	return fmt.Errorf("cgroup %s is outside the run's (%s)", path, b.Cgroup)
}

// hostOpsInBounds are the host ops (NewHostOp) a bounded agent carries
// out in its host's own namespace, with what each may reach there. A new
// host op is refused by every agent until it is named here.
var hostOpsInBounds = map[string]string{
	"host.build-role":           "builds the agent's own role only (Bounds.role)",
	"host.facts":                "reads the host's facts; changes nothing",
	"host.noise":                "reads the host's CPU times besides the agent's own run; changes nothing",
	"host.doctor":               "checks what a run needs; changes nothing",
	"host.clean":                "removes what `twnsbench clean` removes (named with the prefix), never the agent's own run",
	"host.socket-buffer-max":    "reads net.core.rmem_max or wmem_max; changes nothing",
	"transport.check-host":      "checks whether a row can run on the host; changes nothing",
	"transport.program-version": "reads the Go build information of a build's program copied beside the agent's own binary, nothing else; changes nothing",
}

// hostOp refuses a host op the agent does not serve.
func (b *Bounds) hostOp(name string) error {
	if _, ok := hostOpsInBounds[name]; b == nil || ok {
		return nil
	}
	return fmt.Errorf("op %s: not one this agent carries out in its host's namespace", name)
}

// netns refuses a namespace other than the role's.
func (b *Bounds) netns(name string) error {
	if b == nil || name == b.Scope {
		return nil
	}
	return fmt.Errorf("namespace %q is not this run's %s", name, b.Scope)
}

// program refuses a program that would run outside the role: in another
// namespace (or the host's), another cgroup (or none), with its log or
// working directory elsewhere, or in the host's mount namespace.
func (b *Bounds) program(p proc.Program) error {
	if b == nil {
		return nil
	}
	switch {
	case p.NetNS != filepath.Join(ns.RunDir, b.Scope):
		return fmt.Errorf("%s: namespace %q is not this run's %s", p.Name, p.NetNS, b.Scope)
	case p.Cgroup == nil || !within(p.Cgroup.Path, b.Cgroup):
		return fmt.Errorf("%s: its cgroup is not under this run's %s", p.Name, b.Cgroup)
	case p.Log != "" && !within(p.Log, b.Dirs...):
		return fmt.Errorf("%s: log %s is outside the run's directories", p.Name, p.Log)
	case p.Dir != "" && !within(p.Dir, b.Dirs...):
		return fmt.Errorf("%s: working directory %s is outside the run's directories", p.Name, p.Dir)
	case p.HostMounts:
		return fmt.Errorf("%s: a program in the host's mount namespace", p.Name)
	}
	return nil
}

// within reports whether path, made absolute and clean, is one of dirs or
// below one.
func within(path string, dirs ...string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	path = filepath.Clean(path)
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}
