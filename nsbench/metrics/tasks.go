package metrics

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// pfKthread is PF_KTHREAD in /proc/PID/stat's flags field.
const pfKthread = 0x00200000

// TaskCPU is one reading of other programs' CPU (ReadTaskCPU).
type TaskCPU struct {
	// Ticks is the CPU, in USER_HZ ticks, of the processes counted: their
	// threads' (utime+stime) and their reaped children's (cutime+cstime).
	Ticks uint64
	// RunOrphans are the run's processes whose parent is counted (init,
	// after the run's parent exited, as an sshd session's does): process
	// → its CPU and its reaped children's. Reaped, all of it enters the
	// parent's cutime, though none of it was another program's.
	RunOrphans map[ProcID]uint64
}

// ProcID tells a process from a later one with its PID: the PID and the
// start time (field 22 of /proc/PID/stat).
type ProcID struct {
	PID   int
	Start uint64
}

// TicksSince is the CPU of other programs from prev to t: the change of
// Ticks less the CPU of the run's orphans that were reaped meanwhile,
// whose whole history their counted reaper's cutime took in. What such an
// orphan ran after prev is not known once it is reaped, and stays in:
// an exiting sshd session's last tick or so.
func (t TaskCPU) TicksSince(prev TaskCPU) int64 {
	d := int64(t.Ticks - prev.Ticks)
	for id, ticks := range prev.RunOrphans {
		if _, alive := t.RunOrphans[id]; !alive {
			d -= int64(ticks)
		}
	}
	return d
}

// ReadTaskCPU reads the CPU that programs other than the run and the
// harness ran: over every process in procDir (normally /proc) outside the
// cgroup runCgroup (as /proc/PID/cgroup names it, "/twnsb-3fa9c1"), its
// children and its scopes ("/twnsb-3fa9c1-client"), the CPU its threads ran (utime+stime) and the CPU of the
// children it reaped (cutime+cstime). Kernel threads are left out, and so
// is the process self (the harness), its reaped children too: those are
// the run's clients (an iperf3 client that lived for one sample) or the
// harness's own helpers.
//
// Among the processes counted the sum moves only by CPU they ran: one
// that exits takes its utime+stime out, and its reaper's cutime+cstime
// puts them back, whole, when it waits for it (a compiler a build
// spawned). A run's process reaped by a counted one puts its history in:
// RunOrphans lists those it can see coming, to take back out. A process
// reaped by no one (its parent ignores SIGCHLD, as netserver does for its
// test children) takes its CPU with it, and so does a counted process
// reaped by the harness or the run; so does a run's process orphaned and
// reaped between two readings.
//
// A reading is a walk of procDir, not one instant: a process reaped
// while it runs can be counted in neither place (its reaper read before
// the reap, the process gone when its turn comes) and then, whole, in its
// reaper at the next reading — a compiler's second of CPU taken for one
// window's, or lost from one. Processes are read in PID order, a parent
// mostly before its children, so such a reap shows as a listed process
// gone before it was read: the walk is then made again, up to maxWalks
// times, and the one with the fewest kept.
func ReadTaskCPU(procDir string, self int, runCgroup string) (TaskCPU, error) {
	if !strings.HasPrefix(runCgroup, "/") || runCgroup == "/" {
		// "" or "/" would take every process for the run's.
		return TaskCPU{}, fmt.Errorf("task cpu: the run's cgroup %q is not a cgroup below the root", runCgroup)
	}
	return settledWalk(func() (TaskCPU, int, error) { return walkTasks(procDir, self, runCgroup) })
}

// maxWalks bounds the walks of /proc one reading may take. On a 2-core
// host running builds beside runs (load average 16), 23 walks in 300
// met a reap.
const maxWalks = 5

// settledWalk walks until a walk sees no process vanish, at most maxWalks
// times, and keeps the walk with the fewest (the last of equals).
func settledWalk(walk func() (TaskCPU, int, error)) (TaskCPU, error) {
	var best TaskCPU
	fewest := -1
	for range maxWalks {
		t, vanished, err := walk()
		if err != nil {
			return TaskCPU{}, err
		}
		if fewest < 0 || vanished <= fewest {
			best, fewest = t, vanished
		}
		if vanished == 0 {
			break
		}
	}
	return best, nil
}

// walkTasks is one walk of procDir (ReadTaskCPU), and how many processes
// it listed vanished before they were read.
func walkTasks(procDir string, self int, runCgroup string) (TaskCPU, int, error) {
	d, err := os.Open(procDir)
	if err != nil {
		return TaskCPU{}, 0, fmt.Errorf("task cpu: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return TaskCPU{}, 0, fmt.Errorf("task cpu: %w", err)
	}
	procs := map[int]taskStat{}
	vanished := 0
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procDir, n, "stat"))
		if err != nil {
			vanished++
			continue
		}
		st, ok := parseTaskStat(b)
		if !ok || st.kthread {
			continue
		}
		cg, err := os.ReadFile(filepath.Join(procDir, n, "cgroup"))
		if err != nil {
			vanished++
			continue
		}
		st.inRun = inCgroup(cg, runCgroup)
		procs[pid] = st
	}
	out := TaskCPU{RunOrphans: map[ProcID]uint64{}}
	for pid, st := range procs {
		switch parent, seen := procs[st.ppid]; {
		case pid == self:
		case !st.inRun:
			out.Ticks += st.own + st.children
		case st.ppid != self && seen && !parent.inRun:
			out.RunOrphans[ProcID{pid, st.start}] = st.own + st.children
		}
	}
	return out, vanished, nil
}

// inCgroup says whether a /proc/PID/cgroup file puts the process in the
// unified hierarchy's cgroup name or below it, or in one of name's scopes
// (name-client, …: an agent's roles on a host of a run across hosts).
func inCgroup(file []byte, name string) bool {
	for line := range strings.SplitSeq(string(file), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok {
			return path == name || strings.HasPrefix(path, name+"/") || strings.HasPrefix(path, name+"-")
		}
	}
	return false
}

// taskStat is what ReadTaskCPU takes of a /proc/PID/stat line.
type taskStat struct {
	ppid     int
	own      uint64 // utime+stime of its threads, live and exited
	children uint64 // cutime+cstime of the children it waited for
	start    uint64
	kthread  bool
	inRun    bool // set by the caller, from /proc/PID/cgroup
}

// parseTaskStat reads ppid (field 4), flags (9), utime, stime, cutime,
// cstime (14–17) and the start time (22) of a /proc/PID/stat line; the
// command name may hold spaces and parentheses, so fields count from the
// last ')'.
func parseTaskStat(b []byte) (taskStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return taskStat{}, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): field k is f[k-3].
	if len(f) < 20 {
		return taskStat{}, false
	}
	var v [7]uint64 // ppid, flags, utime, stime, cutime, cstime, start
	for j, k := range []int{4, 9, 14, 15, 16, 17, 22} {
		x, err := strconv.ParseUint(string(f[k-3]), 10, 64)
		if err != nil {
			return taskStat{}, false
		}
		v[j] = x
	}
	return taskStat{ppid: int(v[0]), own: v[2] + v[3], children: v[4] + v[5], start: v[6], kthread: v[1]&pfKthread != 0}, true
}
