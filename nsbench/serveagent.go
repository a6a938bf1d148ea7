package nsbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// AgentIdle is how long a host's copy waits for a request (the
// orchestrator pings every role.PingInterval) before it takes the link
// for cut, stops what it started and removes what it built.
const AgentIdle = 5 * role.PingInterval

// ServeAgent is the twnsbench copy on a role's host: it serves the
// orchestrator's requests read from r, answering on w, for the part of a
// run named scope ("twnsb-3fa9c1-client"), until r ends or nothing comes
// for idle (0: AgentIdle). Then it stops its daemons and removes
// everything named with scope on this host, as `clean` would. Its private
// directory holds its PID meanwhile, so that `clean` leaves it alone.
func ServeAgent(ctx context.Context, scope string, idle time.Duration, r io.Reader, w io.Writer) error {
	if !remote.ScopeName.MatchString(scope) {
		return fmt.Errorf("agent: scope %q is not a run's prefix and a role (%s3fa9c1-client)", scope, topology.Prefix)
	}
	if idle <= 0 {
		idle = AgentIdle
	}
	dir := privateDir(scope)
	if err := os.Mkdir(dir, role.PrivateDirMode); err != nil {
		return fmt.Errorf("agent: private directory: %w", err)
	}
	cleanup := func(ctx context.Context) error {
		_, err := cleanRun(ctx, scope)
		return errors.Join(err, removeOwnCopy(scope))
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return errors.Join(fmt.Errorf("agent: private directory: %w", err), cleanup(ctx))
	}
	root, err := proc.Cgroup2Root()
	if err != nil {
		return errors.Join(fmt.Errorf("agent: %w", err), cleanup(ctx))
	}
	// Its requests reach only the run's own: its namespace, its private
	// directory (logs, hosts file and the roles' files inside) and cgroup.
	bounds := &role.Bounds{Scope: scope, Dirs: []string{dir}, Cgroup: role.NewTree(root, scope).Dir()}
	return role.Agent(ctx, r, w, role.AgentConfig{Idle: idle, Cleanup: cleanup, Bounds: bounds})
}

// removeOwnCopy removes the copy of twnsbench the orchestrator installed
// for scope (remote.CopyRoot/<scope>), when this process runs from it: a
// killed orchestrator never removes it itself. Running binaries may be
// unlinked; the process keeps its image.
func removeOwnCopy(scope string) error {
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	dir := filepath.Join(remote.CopyRoot, scope)
	if filepath.Dir(self) != dir {
		return nil // not an installed copy (a test, a local agent)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("agent: remove its copy: %w", err)
	}
	return nil
}
