package nsbench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
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

// The child of TestCleanLeavesAnotherUsersDirectory: the mount it
// guards and the run it cleans.
const (
	victimEnv = "TWNSB_TEST_VICTIM_MOUNT"
	runEnv    = "TWNSB_TEST_FOREIGN_RUN"
)

// TestCleanLeavesAnotherUsersDirectory: another local user makes
// /tmp/<run> (anyone may) with payload symlinks, where a run keeps its
// payload mounts, pointing at a mount, and a harness.pid naming PID 1.
// Cleaning that run detaches nothing through the symlinks, leaves the
// directory alone and says so, and does not take the PID for a live
// harness; a symlink at a payload's place in root's own directory is not
// followed either. The cleaning runs in a child in a private mount namespace
// (unshare): had the check failed, only the child's copy of the mount is
// detached, never the host's.
func TestCleanLeavesAnotherUsersDirectory(t *testing.T) {
	nstest.RequireRoot(t)
	if victim := os.Getenv(victimEnv); victim != "" {
		cleanBesideVictim(t, os.Getenv(runEnv), victim)
		return
	}
	run, err := topology.NewPrefix()
	if err != nil {
		t.Fatal(err)
	}
	dir, victim := privateDir(run), t.TempDir()
	t.Cleanup(func() { os.RemoveAll(dir) })
	remotetest.AsOtherUser(t, `mkdir -- "$1" "$1/server" && ln -s -- "$2" "$1/payload" && ln -s -- "$2" "$1/server/payload" && echo 1 > "$1/harness.pid"`, dir, victim)

	if pid, alive := ownerAlive(run); alive {
		t.Errorf("another user's %s/%s makes PID %d the run's live harness", dir, ownerFile, pid)
	}
	if got := foreignDirs(run); len(got) != 1 || !strings.Contains(got[0], dir+" (owned by uid "+remotetest.OtherUser+", not root") {
		t.Errorf("foreign directories %q: want %s, owned by uid %s", got, dir, remotetest.OtherUser)
	}
	child := exec.Command("unshare", "--mount", "--propagation", "private", "--",
		os.Args[0], "-test.run=^TestCleanLeavesAnotherUsersDirectory$", "-test.count=1", "-test.v")
	child.Env = append(os.Environ(), victimEnv+"="+victim, runEnv+"="+run)
	out, err := child.CombinedOutput()
	if err != nil {
		t.Errorf("cleaning in a private mount namespace: %v\n%s", err, out)
	}
	for _, p := range []string{dir, filepath.Join(dir, "payload"), filepath.Join(dir, "server", "payload"), filepath.Join(dir, ownerFile)} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("cleaning removed another user's %s: %v", p, err)
		}
	}
}

// cleanBesideVictim mounts a tmpfs at victim (in this process's private
// mount namespace), cleans run, and checks the tmpfs is still there.
func cleanBesideVictim(t *testing.T, run, victim string) {
	if err := unix.Mount("tmpfs", victim, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
		t.Fatal(err)
	}
	removed, err := cleanRun(context.Background(), run)
	if err != nil || len(removed) > 0 {
		t.Errorf("cleaning %s: removed %q, error %v; want nothing removed and no error", run, removed, err)
	}
	if !slices.Contains(tmpfsMounts(), victim) {
		t.Fatalf("cleaning %s detached %s through a symlink in another user's directory", run, victim)
	}
	// In a directory of root's, a symlink where a payload is mounted is
	// removed, not followed: only mounts the kernel lists there are
	// twnsbench's.
	own := privateDir(run + "-server")
	if err := os.MkdirAll(filepath.Join(own, "server"), 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(own)
	if err := os.Symlink(victim, filepath.Join(own, "server", "payload")); err != nil {
		t.Fatal(err)
	}
	if err := removePrivateDir(own); err != nil {
		t.Errorf("remove %s: %v", own, err)
	}
	if _, err := os.Lstat(own); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", own, err)
	}
	if !slices.Contains(tmpfsMounts(), victim) {
		t.Errorf("removing %s detached %s through its payload symlink", own, victim)
	}
}

// TestCleanFindsEveryDirectoryOfARun: besides /tmp/<run>, a run makes
// /tmp/<run>-<role> (an agent's, holding its PID) and /tmp/<run>-make-…
// (keys being generated). A live agent's PID keeps the run alive; once it
// is dead, cleaning the run removes all three, keys included.
func TestCleanFindsEveryDirectoryOfARun(t *testing.T) {
	nstest.RequireRoot(t)
	run, err := topology.NewPrefix()
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{privateDir(run), privateDir(run) + "-server", privateDir(run) + "-make-123456"}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
	}
	if err := os.WriteFile(filepath.Join(dirs[2], "id_ed25519"), []byte("a private key"), 0o600); err != nil {
		t.Fatal(err)
	}
	agentPID := filepath.Join(dirs[1], ownerFile)
	if err := os.WriteFile(agentPID, []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if pid, alive := ownerAlive(run); !alive || pid != 1 {
		t.Errorf("with its agent's PID 1 running: owner %d, alive %v; want 1, alive", pid, alive)
	}
	// Above the largest pid_max: no process has it.
	if err := os.WriteFile(agentPID, []byte("4194305"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, alive := ownerAlive(run); alive {
		t.Error("the run is alive with its agent dead")
	}
	removed, err := cleanRun(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !slices.Contains(removed, "dir "+d) {
			t.Errorf("cleaning %s does not say it removed %s: %q", run, d, removed)
		}
		if _, err := os.Lstat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", d, err)
		}
	}
}

// TestCleanSeesTheCgroupsOwner: a run whose private directory this mount
// namespace cannot see (an emulated machine's own /tmp; a container
// sharing the host's cgroups) is still known live by the mark on its
// cgroup, and dead once the marked PID is gone. Before, clean --host on a
// lab machine removed a concurrent run's cgroup as a dead run's.
func TestCleanSeesTheCgroupsOwner(t *testing.T) {
	nstest.RequireRoot(t)
	root, err := proc.Cgroup2Root()
	if err != nil {
		t.Skip(err)
	}
	run, err := topology.NewPrefix()
	if err != nil {
		t.Fatal(err)
	}
	cg, err := proc.NewCgroup(cgroupDir(root, run))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cg.Remove(context.Background()) })
	if _, ok := cg.Owner(); ok {
		t.Fatal("a new cgroup has an owner")
	}
	if err := cg.MarkOwner(1); err != nil {
		t.Fatal(err)
	}
	if pid, alive := ownerAlive(run); !alive || pid != 1 {
		t.Errorf("cgroup marked by PID 1, no private directory: owner %d, alive %v; want 1, alive", pid, alive)
	}
	if slices.Contains(Leftovers(), run) {
		t.Errorf("Leftovers lists %s, whose cgroup's owner runs", run)
	}
	if err := cg.MarkOwner(4194305); err != nil { // above the largest pid_max
		t.Fatal(err)
	}
	if pid, alive := ownerAlive(run); alive || pid != 4194305 {
		t.Errorf("cgroup marked by a PID no process has: owner %d, alive %v; want 4194305, dead", pid, alive)
	}
}

// TestCleanRemovesAgentScopes: an agent's cgroup (<run>-<role>, the top of
// its role's tree on a host of a run across hosts) keeps its run live
// while the agent runs, and clean removes it with the run once the agent
// is dead. Before, clean removed only <run> and said "nothing to clean"
// beside a killed run's <run>-client and <run>-server.
func TestCleanRemovesAgentScopes(t *testing.T) {
	nstest.RequireRoot(t)
	root, err := proc.Cgroup2Root()
	if err != nil {
		t.Skip(err)
	}
	run, err := topology.NewPrefix()
	if err != nil {
		t.Fatal(err)
	}
	scope, err := proc.NewCgroup(cgroupDir(root, run) + "-client")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := proc.NewCgroup(scope.Path + "/client")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { leaf.Remove(context.Background()); scope.Remove(context.Background()) })
	if err := scope.MarkOwner(1); err != nil {
		t.Fatal(err)
	}
	if pid, alive := ownerAlive(run); !alive || pid != 1 {
		t.Errorf("agent's cgroup marked by PID 1: owner %d, alive %v; want 1, alive", pid, alive)
	}
	if err := scope.MarkOwner(4194305); err != nil {
		t.Fatal(err)
	}
	if _, alive := ownerAlive(run); alive {
		t.Error("agent's cgroup marked by a PID no process has: alive")
	}
	removed, err := cleanRun(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(scope.Path); !os.IsNotExist(err) {
		t.Errorf("%s after clean: %v; removed %v", scope.Path, err, removed)
	}
}
