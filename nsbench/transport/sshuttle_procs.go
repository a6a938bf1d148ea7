package transport

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// task is a process that descends from one Up started, by PID and start
// time, so that a PID reused after its exit is never taken for it; Argv
// is its command line when it was listed.
type task struct {
	PID   int
	Start string
	Argv  []string
}

// treeOf asks for the processes among PIDs (a role's) that descend from
// Roots, on the role's host.
type treeOf struct{ Roots, PIDs []int }

// The ops on a role's processes, on its host: sshuttle's close and a
// restart's full stop of a daemon (restart.go) share them.
var (
	descendantsOp = role.NewOp("transport.descendants", func(_ context.Context, a treeOf) ([]task, error) {
		return descendantsOf(a.Roots, a.PIDs), nil
	})
	waitGoneOp = role.NewOp("transport.wait-gone", func(_ context.Context, ts []task) (role.Nothing, error) {
		return role.Nothing{}, waitGone(ts)
	})
)

// descendants lists, per role, the processes in the transport's cgroups
// forked by the sshuttle client (in the client's) or the private sshd (in
// the server's), not the processes themselves; each role's on its own
// host. Once those exit, their children are reparented, so close takes
// this list before stopping them.
func (u *sshuttleUp) descendants(ctx context.Context) map[string][]task {
	out := map[string][]task{}
	for name, root := range map[string]*proc.Process{topology.Client: u.client, topology.Server: u.server} {
		r := u.tb.Roles[name]
		if r == nil || root == nil {
			continue
		}
		pids, _ := role.PIDs(ctx, r)
		ts, err := descendantsOp.On(ctx, r, treeOf{Roots: []int{root.PID()}, PIDs: pids})
		if err == nil && len(ts) > 0 {
			out[name] = ts
		}
	}
	return out
}

// descendantsOf is descendants' work on one host.
func descendantsOf(rootPIDs, pids []int) []task {
	roots := map[int]bool{}
	for _, p := range rootPIDs {
		roots[p] = true
	}
	var ts []task
	for _, pid := range pids {
		_, start, err := procStat(pid)
		if err != nil || roots[pid] {
			continue
		}
		for a := pid; a > 1; {
			if a, _, err = procStat(a); err != nil {
				break
			}
			if roots[a] {
				b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
				argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
				if len(b) == 0 {
					argv = nil
				}
				ts = append(ts, task{PID: pid, Start: start, Argv: argv})
				break
			}
		}
	}
	return ts
}

// procStat reads a process's parent and start time from /proc/PID/stat; a
// zombie counts as gone.
func procStat(pid int) (ppid int, start string, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, "", err
	}
	// pid (comm) state ppid … starttime (field 22); comm may hold spaces.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 20 || f[0] == "Z" {
		return 0, "", fmt.Errorf("pid %d: gone", pid)
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[19], err
}

// waitGone waits for ts, processes of this host, to exit, then kills by
// PID those still running after stopGrace (sshuttle's helper deletes its
// nft tables on the way out; dropTables catches a killed one's; a
// restarted sshd's sessions were sent SIGTERM first).
func waitGone(ts []task) error {
	alive := func(t task) bool { _, start, err := procStat(t.PID); return err == nil && start == t.Start }
	deadline, killed := time.Now().Add(stopGrace), false
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		ts = slices.DeleteFunc(ts, func(t task) bool { return !alive(t) })
		if len(ts) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if killed {
				return fmt.Errorf("pids %v survived SIGKILL", ts)
			}
			for _, t := range ts {
				syscall.Kill(t.PID, syscall.SIGKILL) // a descendant of ours, checked by start time just now
			}
			deadline, killed = time.Now().Add(stopGrace), true
		}
		time.Sleep(delay) // polling for the exits, a condition
	}
}
