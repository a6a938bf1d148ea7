package nsbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/residue"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// CleanReport is what Clean found and did.
type CleanReport struct {
	Removed []string // "netns twnsb-3fa9c1-client", ...
	Live    []string // runs left alone because their harness still runs
	Foreign []string // directories named like a run's that twnsbench did not make, left alone
}

// Clean removes everything that dead runs left behind (a run killed with
// SIGKILL, say): processes (through the run's cgroups), namespaces,
// /etc/netns entries, payload mounts, private directories and cgroups, and
// the copies of twnsbench that killed commands installed here. It
// needs nothing but the names, skips runs whose harness is alive unless
// force is set, and is safe to run twice.
func Clean(ctx context.Context, force bool) (CleanReport, error) { return clean(ctx, force, "") }

// clean is Clean leaving run own alone ("": none).
func clean(ctx context.Context, force bool, own string) (CleanReport, error) {
	var rep CleanReport
	var errs []error
	for _, run := range leftoverRuns() {
		if run == own {
			continue
		}
		rep.Foreign = append(rep.Foreign, foreignDirs(run)...)
		if pid, alive := ownerAlive(run); alive && !force {
			rep.Live = append(rep.Live, fmt.Sprintf("%s (harness pid %d)", run, pid))
			continue
		}
		removed, err := cleanRun(ctx, run)
		rep.Removed = append(rep.Removed, removed...)
		errs = append(errs, err)
	}
	// Copies of twnsbench that killed commands installed here (never one
	// in use).
	copies, err := remote.RemoveStaleCopies()
	for _, c := range copies {
		rep.Removed = append(rep.Removed, c+" (a copy of twnsbench)")
	}
	errs = append(errs, err)
	return rep, errors.Join(errs...)
}

// Leftovers lists the runs that left anything on this host — a namespace,
// a link, a cgroup, a mount, a process, a file under /tmp, /run or
// /etc/netns (package residue) — and whose harness is gone or is this
// very process. The second is what a test needs: a run it started
// in-process has ended when the test looks, so whatever that run left is
// a leak although its owner, the test binary, still runs. Runs of other
// live harnesses (another test binary, a run in another shell) are theirs.
func Leftovers() []string {
	var left []string
	for _, run := range leftoverRuns() {
		if pid, alive := ownerAlive(run); !alive || pid == os.Getpid() {
			left = append(left, run)
		}
	}
	return left
}

// leftoverRuns lists the run prefixes found in every place a run creates
// something.
func leftoverRuns() []string { return residue.Runs(residue.Find(topology.Prefix)) }

// ownerAlive reads the PID of the run's harness, or of an agent of the
// run, from the run's cgroup and from the run's directories that are
// root's (another user's could name any process), and reports whether one
// of them runs. The cgroup's mark is seen where the private directory is
// not: from a mount namespace with its own /tmp that shares the cgroups
// (an emulated machine's clean --host saw a concurrent run as dead).
func ownerAlive(run string) (int, bool) {
	pid := 0
	for _, dir := range runCgroups(run) {
		if p, ok := (&proc.Cgroup{Path: dir}).Owner(); ok {
			if processAlive(p) {
				return p, true
			}
			pid = p
		}
	}
	for _, dir := range runDirs(run) {
		if st, err := ownPrivateDir(dir); st == nil || err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		p, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || p <= 0 {
			continue
		}
		if processAlive(p) {
			return p, true
		}
		pid = p
	}
	return pid, false
}

// processAlive reports whether pid runs. A zombie does not: a harness
// killed after its parent died waits, unreaped, for PID 1, which may take
// long.
func processAlive(pid int) bool {
	if unix.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "pid (comm) S ...": the state follows the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	state := b[i+2]
	return state != 'Z' && state != 'X'
}

// cleanRun removes one run's leftovers, processes first: a namespace
// outlives its deletion while a process is inside it.
func cleanRun(ctx context.Context, run string) (removed []string, err error) {
	var errs []error
	for _, dir := range runCgroups(run) {
		removed = append(removed, "cgroup "+dir+" (and its processes)")
		errs = append(errs, role.NewTree(filepath.Dir(dir), filepath.Base(dir)).Remove(ctx))
	}
	nss, lerr := ns.List(run)
	errs = append(errs, lerr)
	for _, n := range nss {
		removed = append(removed, "netns "+n)
	}
	etc, _ := filepath.Glob(filepath.Join(topology.EtcNetns, run+"*"))
	for _, e := range etc {
		removed = append(removed, "file "+e)
	}
	errs = append(errs, topology.Clean(run)...)
	// What the transports leave outside, once their processes are dead.
	for _, spec := range transport.Registered() {
		if spec.CleanLeftovers != nil {
			left, err := spec.CleanLeftovers(run)
			errs = append(errs, err)
			removed = append(removed, left...)
		}
	}
	for _, dir := range runDirs(run) {
		switch st, err := ownPrivateDir(dir); {
		case errors.Is(err, errNotOurs):
			// Someone else's: left alone (Clean lists it).
		case err != nil:
			errs = append(errs, fmt.Errorf("private directory %s: %w", dir, err))
		case st != nil:
			removed = append(removed, "dir "+dir)
			errs = append(errs, removePrivateDir(dir))
		}
	}
	return removed, errors.Join(errs...)
}

// runCgroups lists the run's cgroups on this host: its own and its
// agents' (<run>-<role>: on a host of a run across hosts, or on this one
// for a role=local), each the top of a role.Tree.
func runCgroups(run string) []string {
	root, err := proc.Cgroup2Root()
	if err != nil {
		return nil
	}
	var dirs []string
	if _, err := os.Stat(cgroupDir(root, run)); err == nil {
		dirs = append(dirs, cgroupDir(root, run))
	}
	scopes, _ := filepath.Glob(cgroupDir(root, run) + "-*")
	return append(dirs, scopes...)
}

// runDirs lists what a run makes on a host under PrivateBase: its private
// directory, an agent's (<run>-<role>), and the scratch directories keys
// are generated in (<run>-make-…).
func runDirs(run string) []string {
	others, _ := filepath.Glob(privateDir(run) + "-*")
	return append([]string{privateDir(run)}, others...)
}

// foreignDirs describes the directories named like the run's that are not
// twnsbench's (ownPrivateDir).
func foreignDirs(run string) []string {
	var out []string
	for _, dir := range runDirs(run) {
		if _, err := ownPrivateDir(dir); errors.Is(err, errNotOurs) {
			out = append(out, fmt.Sprintf("%s (%v)", dir, err))
		}
	}
	return out
}
