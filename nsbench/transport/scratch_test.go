package transport

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/residue"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// TestScratchIsNamedForItsRun: the directory generated keys pass through
// is named for the run of the role they are for, mode 0700, where clean
// looks (residue.Find lists it with the run), whatever TMPDIR says; a
// directory that names no run gets none.
func TestScratchIsNamedForItsRun(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	run, err := topology.NewPrefix()
	if err != nil {
		t.Fatal(err)
	}
	// A role's directory on this host and on another (its agent's).
	for _, roleDir := range []string{filepath.Join("/tmp", run, "server"), filepath.Join("/tmp", run+"-client", "client")} {
		scratch, err := newScratch(roleDir)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Lstat(scratch)
		if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
			t.Errorf("%s for %s: %v, mode %v; want a directory, 0700", scratch, roleDir, err, st.Mode())
		}
		found := slices.ContainsFunc(residue.Find(run), func(o residue.Object) bool { return o.What == scratch })
		if filepath.Dir(scratch) != "/tmp" || !found {
			t.Errorf("%s for %s: clean does not find it with run %s", scratch, roleDir, run)
		}
		if err := os.Remove(scratch); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := newScratch("/srv/keys/server"); err == nil {
		os.Remove(s)
		t.Errorf("a scratch directory %s for a directory that names no run", s)
	}
}
