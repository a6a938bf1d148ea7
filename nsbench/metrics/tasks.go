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

// TaskCPU is one reading of other programs' CPU (ReadTaskCPU): per
// process counted, and per run's orphan (below), its CPU and its parent,
// so that a difference of two readings can follow a process into its
// reaper (TicksSince).
type TaskCPU struct {
	Procs map[ProcID]TaskTicks
}

// TaskTicks is one process's CPU in USER_HZ ticks at a reading.
type TaskTicks struct {
	Parent   int    // its PPID
	Own      uint64 // its threads' utime+stime, live and exited
	Children uint64 // cutime+cstime: the children it waited for, whole
	// Run marks a run's process whose parent is counted (init, after the
	// run's parent exited, as an sshd session's does): not counted
	// itself, but reaped, its history enters its reaper's Children,
	// though none of it was another program's.
	Run bool
}

// ProcID tells a process from a later one with its PID: the PID and the
// start time (field 22 of /proc/PID/stat).
type ProcID struct {
	PID   int
	Start uint64
}

// maxReapDepth bounds the walk from a vanished process to its reaper.
const maxReapDepth = 64

// TicksSince is the CPU of other programs from prev to t, never below
// zero: per process counted at t, what its threads ran since prev (all
// it ran for one started since), and what its reaped children ran since
// prev — its Children's growth less the history, as prev read it, of
// the processes that vanished meanwhile and were its (or its vanished
// descendants') children, at least 0. At least 0, because that growth
// can lack them: a parent that ignores SIGCHLD (netserver's test
// children) reaps nothing into Children, so the vanished child's CPU in
// the window is lost, never its history taken out twice. A vanished
// process with no counted ancestor alive at both readings (reaped by the
// harness or the run, or orphaned to a reaper only t knows) counts 0.
func (t TaskCPU) TicksSince(prev TaskCPU) int64 {
	prevPID := make(map[int]ProcID, len(prev.Procs))
	for id := range prev.Procs {
		prevPID[id.PID] = id
	}
	taken := map[ProcID]uint64{} // reaper → vanished history
	for id, p := range prev.Procs {
		if _, alive := t.Procs[id]; alive {
			continue
		}
		if r, ok := t.reaper(prev, prevPID, p.Parent); ok {
			taken[r] += p.Own + p.Children
		}
	}
	var d int64
	for id, p := range t.Procs {
		if p.Run {
			continue
		}
		before, seen := prev.Procs[id]
		if !seen || before.Run {
			d += int64(p.Own + p.Children)
			continue
		}
		d += int64(p.Own - min(before.Own, p.Own))
		d += max(0, int64(p.Children-min(before.Children, p.Children))-int64(taken[id]))
	}
	return d
}

// reaper is the counted process, alive at prev and t, nearest above the
// parent PID ppid of a process prev read: its parent, or, when that
// vanished too, the parent's, whose Children then takes both in.
func (t TaskCPU) reaper(prev TaskCPU, prevPID map[int]ProcID, ppid int) (ProcID, bool) {
	for range maxReapDepth {
		id, ok := prevPID[ppid]
		if !ok {
			return ProcID{}, false // the harness, the run, a kernel thread or none
		}
		if now, alive := t.Procs[id]; alive && !now.Run && !prev.Procs[id].Run {
			return id, true
		}
		ppid = prev.Procs[id].Parent
	}
	return ProcID{}, false
}

// ReadTaskCPU reads the CPU that programs other than the run and the
// harness ran: over every process in procDir (normally /proc) outside the
// cgroup runCgroup (as /proc/PID/cgroup names it, "/twnsb-3fa9c1"), its
// children and its scopes ("/twnsb-3fa9c1-client"), the CPU its threads
// ran (utime+stime) and the CPU of the children it reaped
// (cutime+cstime). Kernel threads are left out, and so is the process
// self (the harness); a process it reaps counts 0 from then on
// (TicksSince). The run's processes whose parent is counted are read
// too (TaskTicks.Run), to take their history back out of their reaper's.
//
// The processes are read one after another, so a child reaped between
// its own reading and its parent's would be in both (or in neither):
// the reading is taken again, up to maxScans times, until a second pass
// finds every process it read still there with the same reaped CPU and
// none failed to read (no reap while it read), else the last one is
// kept.
func ReadTaskCPU(procDir string, self int, runCgroup string) (TaskCPU, error) {
	if !strings.HasPrefix(runCgroup, "/") || runCgroup == "/" {
		// "" or "/" would take every process for the run's.
		return TaskCPU{}, fmt.Errorf("task cpu: the run's cgroup %q is not a cgroup below the root", runCgroup)
	}
	var procs map[int]taskStat
	for range maxScans {
		var whole bool
		var err error
		if procs, whole, err = scanTasks(procDir, runCgroup); err != nil {
			return TaskCPU{}, err
		}
		if whole && unreaped(procDir, procs) {
			break
		}
	}
	out := TaskCPU{Procs: map[ProcID]TaskTicks{}}
	for pid, st := range procs {
		tt := TaskTicks{Parent: st.ppid, Own: st.own, Children: st.children}
		switch parent, seen := procs[st.ppid]; {
		case pid == self:
		case !st.inRun:
			out.Procs[ProcID{pid, st.start}] = tt
		case st.ppid != self && seen && !parent.inRun:
			tt.Run = true
			out.Procs[ProcID{pid, st.start}] = tt
		}
	}
	return out, nil
}

// maxScans bounds how often ReadTaskCPU reads /proc for one reading.
const maxScans = 5

// scanTasks reads every user process in procDir; whole is false when one
// listed could not be read (it exited, and was reaped, meanwhile).
func scanTasks(procDir, runCgroup string) (procs map[int]taskStat, whole bool, err error) {
	d, err := os.Open(procDir)
	if err != nil {
		return nil, false, fmt.Errorf("task cpu: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, false, fmt.Errorf("task cpu: %w", err)
	}
	procs, whole = map[int]taskStat{}, true
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procDir, n, "stat"))
		if err != nil {
			whole = false
			continue
		}
		st, ok := parseTaskStat(b)
		if !ok || st.kthread {
			continue
		}
		cg, err := os.ReadFile(filepath.Join(procDir, n, "cgroup"))
		if err != nil {
			whole = false
			continue
		}
		st.inRun = inCgroup(cg, runCgroup)
		procs[pid] = st
	}
	return procs, whole, nil
}

// unreaped says whether every process of procs is still in procDir, the
// same one, with the same reaped CPU: no reap happened while they were
// read.
func unreaped(procDir string, procs map[int]taskStat) bool {
	for pid, st := range procs {
		b, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "stat"))
		if err != nil {
			return false
		}
		now, ok := parseTaskStat(b)
		if !ok || now.start != st.start || now.children != st.children {
			return false
		}
	}
	return true
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
