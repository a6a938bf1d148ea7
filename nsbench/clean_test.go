package nsbench

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

func TestProcessAliveTreatsZombiesAsDead(t *testing.T) {
	if !processAlive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Not waited for yet: once it exits it stays a zombie until Wait.
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("an exited, unreaped child still counts as alive")
		}
		time.Sleep(5 * time.Millisecond) // polling the child's state, not synchronising on time
	}
	cmd.Wait()
	if processAlive(cmd.Process.Pid) {
		t.Error("a reaped child counts as alive")
	}
}

// Leftovers sees a run whatever it left (here a namespace and its private
// directory) even while its owner — this test binary, as for every run a
// test starts in-process — is alive; a run owned by another live process
// is that process's.
func TestLeftoversIncludeRunsOfThisProcess(t *testing.T) {
	nstest.RequireRoot(t)
	for _, c := range []struct {
		owner int
		want  bool
	}{{os.Getpid(), true}, {1, false}} {
		run, err := topology.NewPrefix()
		if err != nil {
			t.Fatal(err)
		}
		dir := privateDir(run)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(c.owner)), 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := ns.Create(run + "-client")
		if err != nil {
			t.Fatal(err)
		}
		n.Close()
		defer ns.Delete(n.Name)
		if got := slices.Contains(Leftovers(), run); got != c.want {
			t.Errorf("owner pid %d: listed %v, want %v", c.owner, got, c.want)
		}
		if err := ns.Delete(n.Name); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(Leftovers(), run) {
			t.Errorf("owner pid %d: still listed once removed", c.owner)
		}
	}
}

// A run killed with its payload mounted in the server role's directory:
// removing its private directory unmounts the payload first (a killed
// host's agent and clean both go this way).
func TestRemovePrivateDirUnmountsRolePayload(t *testing.T) {
	nstest.RequireRoot(t)
	dir := privateDir(nstest.Prefix(t) + "-server")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := mountPayload(filepath.Join(dir, "server"), 1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := removePrivateDir(dir); err != nil {
		p.unmount()
		t.Fatalf("remove: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", dir, err)
	}
	b, _ := os.ReadFile("/proc/self/mounts")
	if slices.Contains(strings.Fields(string(b)), p.Dir) {
		t.Errorf("%s still mounted", p.Dir)
	}
}
