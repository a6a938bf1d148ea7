package nstest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// Roles brings up the reference topology under a fresh prefix and gives
// each role its cgroup, logging into logDir; the test's cleanup removes
// both (and fails the test if the cgroups remain). It needs root.
func Roles(t *testing.T, logDir string) (*topology.Topology, *role.Tree, map[string]*role.Role) {
	t.Helper()
	RequireRoot(t)
	prefix := Prefix(t)
	topo, err := topology.Up(topology.DefaultSpec(prefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := topo.Down(); err != nil {
			t.Error(err)
		}
	})
	root, err := proc.Cgroup2Root()
	if err != nil {
		t.Fatal(err)
	}
	tree := role.NewTree(root, prefix)
	// The roles' files go in a directory named for the run, with a run's
	// own mode (the bench account passes through to its keys): generated
	// keys pass through a scratch directory named after the run
	// (transport's newScratch), which refuses a directory of no run.
	parent := t.TempDir()
	private := filepath.Join(parent, prefix)
	for _, d := range []string{parent, private} {
		if err := os.Mkdir(d, role.PrivateDirMode); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		if err := os.Chmod(d, role.PrivateDirMode); err != nil {
			t.Fatal(err)
		}
	}
	roles, err := tree.Roles(topo, role.Dirs{Log: logDir, Private: private})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := tree.Remove(ctx); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(tree.Dir()); !os.IsNotExist(err) {
			t.Errorf("%s left after Remove: %v", tree.Dir(), err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return topo, tree, roles
}
