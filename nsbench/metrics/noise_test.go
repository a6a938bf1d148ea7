package metrics

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestNoiseShares(t *testing.T) {
	n := Noise{BackgroundCPUSec: 1, StealSec: 0.2, WindowSec: 2, Cores: 2}
	if got := n.BackgroundPct(); got != 25 {
		t.Errorf("background %% = %v, want 25", got)
	}
	if got := n.StealPct(); got != 5 {
		t.Errorf("steal %% = %v, want 5", got)
	}
	if (Noise{}).BackgroundPct() != 0 {
		t.Error("an empty window must give 0, not NaN")
	}
}

// Background is the task CPU of every user process outside the run and
// the harness; the host's busy columns and idle time are not used, steal
// is counted apart.
func TestSubNoise(t *testing.T) {
	prev := Snapshot{RunUsageUsec: 5_000_000, HarnessCPUSec: 1, HostReading: HostReading{
		Host:  CPUTimes{User: 1000, System: 500, Idle: 2000, IOWait: 10, Steal: 10},
		Tasks: oneProc(900), Cores: 2, At: time.Unix(100, 0)}}
	// 2 s on 2 CPUs: other programs' tasks +1.2 s → background 1.2 s,
	// whatever the run (+1.5 s) and the host's columns did.
	now := Snapshot{RunUsageUsec: 6_500_000, HarnessCPUSec: 1.5, HostReading: HostReading{
		Host:  CPUTimes{User: 1100, System: 550, SoftIRQ: 90, Idle: 2040, IOWait: 20, Steal: 20},
		Tasks: oneProc(1020), Cores: 2, At: time.Unix(102, 0)}}
	d := now.Sub(prev)
	if d.Noise == nil {
		t.Fatal("no noise")
	}
	if got := d.Noise.BackgroundCPUSec; math.Abs(got-1.2) > 1e-9 {
		t.Errorf("background = %v, want 1.2", got)
	}
	if got := d.Noise.StealSec; math.Abs(got-0.1) > 1e-9 {
		t.Errorf("steal = %v, want 0.1", got)
	}
	if d.Noise.WindowSec != 2 || d.Noise.Cores != 2 {
		t.Errorf("window = %v s on %d CPUs, want 2 s on 2", d.Noise.WindowSec, d.Noise.Cores)
	}
	if (Snapshot{}).Sub(Snapshot{}).Noise != nil {
		t.Error("snapshots without the run cgroup must give no noise")
	}
	prev.Cores = 1
	if now.Sub(prev).Noise != nil {
		t.Error("a window over which the CPUs online changed has no capacity to share: want no noise")
	}
}

// oneProc is a reading of one long-lived counted process that has run
// ticks.
func oneProc(ticks uint64) TaskCPU {
	return TaskCPU{Procs: map[ProcID]TaskTicks{{PID: 1, Start: 1}: {Own: ticks}}}
}

// A child reaped between two readings, when its parent ignores SIGCHLD
// (netserver's test children: reaped by the kernel, not into the
// parent's cutime) or when the harness reaps it, takes its whole history
// with it: the background estimate loses what it ran in the window, but
// never goes below zero by its history. A child its counted parent reaps
// adds what it ran in the window only; one of the run orphaned to a
// counted reaper adds nothing.
func TestTicksSinceReapedChild(t *testing.T) {
	proc := func(parent int, own, children uint64) TaskTicks {
		return TaskTicks{Parent: parent, Own: own, Children: children}
	}
	id := func(pid int) ProcID { return ProcID{pid, uint64(1000 + pid)} }
	prev := TaskCPU{Procs: map[ProcID]TaskTicks{
		id(1):   proc(0, 5, 7),    // init
		id(40):  proc(1, 10, 0),   // netserver (SIGCHLD ignored)
		id(41):  proc(40, 300, 0), // its test child: 3 CPU-s so far
		id(50):  proc(1, 2, 0),    // a shell
		id(51):  proc(50, 100, 0), // its job
		id(60):  proc(100, 80, 0), // a helper of the harness (PID 100, not counted)
		id(302): {Parent: 1, Own: 40, Run: true},
	}}
	now := TaskCPU{Procs: map[ProcID]TaskTicks{
		id(1):  proc(0, 5, 7+40), // reaped the run's orphan 302: 40 ticks, none another program's
		id(40): proc(1, 11, 0),   // 1 tick; its child exited, auto-reaped: cutime unchanged
		id(50): proc(1, 2, 100+6),
	}}
	// netserver 1, the shell's job 6 (its 106 less the 100 prev read);
	// the auto-reaped child's and the harness's helper's in-window CPU is
	// not seen, their histories (300, 80) not taken out.
	if got := now.TicksSince(prev); got != 7 {
		t.Errorf("background %d ticks, want 7 (before: the sum's change, %d)", got, sumTicks(now)-sumTicks(prev))
	}
	if got := sumTicks(now) - sumTicks(prev); got >= 0 {
		t.Errorf("the plain sum's change %d: the case no longer tests a reaped history", got)
	}
}

// sumTicks is the sum of a reading's counted processes' own and reaped CPU:
// the estimate as a plain change of sums would take it.
func sumTicks(r TaskCPU) int64 {
	var n int64
	for _, p := range r.Procs {
		if !p.Run {
			n += int64(p.Own + p.Children)
		}
	}
	return n
}

// A reading taken while a child is reaped is taken again: the second pass
// finds the child gone, or its parent's reaped CPU changed.
func TestReadTaskCPURereadsATornScan(t *testing.T) {
	dir := t.TempDir()
	const self, user, run = 100, 0x400100, "/twnsb-3fa9c1"
	writeProc(t, dir, map[int]fakeProc{
		1:  {0, user, 3, 2, 0, 0, "/init.scope"},
		50: {1, user, 2, 0, 0, 0, "/user.slice"},
		51: {50, user, 100, 0, 0, 0, "/user.slice"},
	})
	procs, whole, err := scanTasks(dir, run)
	if err != nil || !whole || !unreaped(dir, procs) {
		t.Fatalf("a still /proc: whole %v, unreaped %v, %v", whole, unreaped(dir, procs), err)
	}
	// 51 exits and 50 reaps it after the scan read both.
	writeProc(t, dir, map[int]fakeProc{
		1:  {0, user, 3, 2, 0, 0, "/init.scope"},
		50: {1, user, 2, 0, 100, 0, "/user.slice"},
	})
	if unreaped(dir, procs) {
		t.Error("a reap after the scan read the child: the second pass did not see it")
	}
}

// fakeProc is one process of a stand-in for /proc.
type fakeProc struct {
	ppid                                int
	flags, utime, stime, cutime, cstime uint64
	cgroup                              string // its unified-hierarchy path
}

// writeProc makes a stand-in for /proc holding procs (PID → process).
func writeProc(t *testing.T, dir string, procs map[int]fakeProc) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
	for pid, p := range procs {
		d := filepath.Join(dir, strconv.Itoa(pid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		// Fields 1–17; the name holds a space and a ')', as names may.
		stat := fmt.Sprintf("%d (a b) c) S %d %d %d 0 -1 %d 0 0 0 0 %d %d %d %d 20 0 1 0 %d 0 0\n",
			pid, p.ppid, pid, pid, p.flags, p.utime, p.stime, p.cutime, p.cstime, 1000+pid)
		cgroup := "12:cpu,cpuacct:/\n0::" + p.cgroup + "\n"
		if err := os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup"), []byte(cgroup), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ReadTaskCPU counts the own and reaped CPU of every user process
// outside the run's cgroup and the harness: no kernel thread, nothing in
// the run's cgroup or below it (a cgroup whose name only begins like it
// is another's), nothing of the harness, its reaped children included
// (the run's clients). A process that exits moves its CPU into its
// reaper's: the sum moves by what it ran in the window only. A run's
// process orphaned to init brings its history into init's cutime when
// reaped: taken back out.
func TestReadTaskCPU(t *testing.T) {
	dir := t.TempDir()
	const self, user, kthread = 100, 0x400100, 0x208040
	const run = "/twnsb-3fa9c1"
	writeProc(t, dir, map[int]fakeProc{
		1:    {0, user, 3, 2, 4, 3, "/init.scope"},        // 5 own, 7 reaped
		2:    {0, kthread, 600, 400, 0, 0, "/"},           // kthreadd
		self: {1, user, 40, 10, 20, 10, "/user.slice"},    // the harness
		200:  {1, user, 15, 5, 0, 0, "/user.slice"},       // another program
		300:  {self, user, 70, 10, 9, 0, run + "/server"}, // the run's sshd
		301:  {self, user, 30, 0, 0, 0, run},              // the run's client
		302:  {1, user, 40, 0, 0, 0, run + "/server"},     // its session, orphaned
		400:  {1, user, 2, 0, 0, 0, "/twnsb-3fa9c1x"},     // another cgroup's
		500:  {1, user, 8, 0, 0, 0, run + "-client/base"}, // a role's scope on a host
	})
	before, err := ReadTaskCPU(dir, self, run)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(5 + 7 + 20 + 2); sumTicks(before) != want {
		t.Errorf("sum %d ticks, want %d: other programs' own and reaped CPU only", sumTicks(before), want)
	}
	var orphans []ProcID
	for id, p := range before.Procs {
		if p.Run {
			orphans = append(orphans, id)
		}
	}
	if slices.SortFunc(orphans, func(a, b ProcID) int { return a.PID - b.PID }); !slices.Equal(orphans, []ProcID{{302, 1302}, {500, 1500}}) {
		t.Errorf("run's orphans %v, want 302 and 500", orphans)
	}
	// 200 runs 3 more ticks and exits, reaped by init, as is the run's
	// orphan 302 (40 ticks); the run's 301 is reaped by the harness, which
	// spins 500 ticks itself; the run spins.
	writeProc(t, dir, map[int]fakeProc{
		1:    {0, user, 3, 2, 4 + 23 + 40, 3, "/init.scope"},
		2:    {0, kthread, 900, 400, 0, 0, "/"},
		self: {1, user, 540, 10, 20 + 30, 10, "/user.slice"},
		300:  {self, user, 900, 10, 9, 0, run + "/server"},
		400:  {1, user, 2, 0, 0, 0, "/twnsb-3fa9c1x"},
		500:  {1, user, 80, 0, 0, 0, run + "-client/base"},
	})
	after, err := ReadTaskCPU(dir, self, run)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TicksSince(before); got != 3 {
		t.Errorf("the window's background %d ticks, want 3: what the exited program ran in it", got)
	}
	for _, bad := range []string{"", "/", "twnsb-3fa9c1"} {
		if _, err := ReadTaskCPU(dir, self, bad); err == nil {
			t.Errorf("run cgroup %q: want an error (it would take every process, or none, for the run's)", bad)
		}
	}
	if _, err := ReadTaskCPU(filepath.Join(dir, "missing"), self, run); err == nil {
		t.Error("a missing /proc: want an error")
	}
}

// On the real kernel, another program that keeps spawning short-lived
// children and reaping them is counted with them: their CPU moves into
// its cutime as each exits, and none of it is lost between two readings.
func TestReadTaskCPULive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spawner := exec.CommandContext(ctx, "sh", "-c", `while :; do sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'; done`)
	if err := spawner.Start(); err != nil {
		t.Fatal(err)
	}
	defer spawner.Wait()
	defer spawner.Process.Kill()
	read := func() (own, children uint64) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", spawner.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		st, ok := parseTaskStat(b)
		if !ok {
			t.Fatalf("unparsed stat %q", b)
		}
		return st.own, st.children
	}
	notRun := "/twnsbench-no-such-run" // every process is outside it
	ownBefore, childrenBefore := read()
	before, err := ReadTaskCPU("/proc", os.Getpid(), notRun)
	if err != nil {
		t.Fatal(err)
	}
	// Until the spawner's children have run a good part of a second.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, children := read(); children-childrenBefore >= 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the spawner's children ran under 0.3 CPU-s in 30 s")
		}
		time.Sleep(20 * time.Millisecond) // polling the counter, bounded above
	}
	after, err := ReadTaskCPU("/proc", os.Getpid(), notRun)
	if err != nil {
		t.Fatal(err)
	}
	ownAfter, childrenAfter := read()
	ran := (ownAfter - ownBefore) + (childrenAfter - childrenBefore)
	// The spawner is read last: it may have run a tick or two more by then.
	if got := after.TicksSince(before); got+3 < int64(ran) {
		t.Errorf("the window's task CPU %d ticks, want at least the spawner's and its reaped children's %d", got, ran)
	}
}

// A read slower than maxBracket (the harness preempted between the run's
// counter and the host's) is tried again and the narrow one kept; the
// stamp is the middle of the bracket it was read in.
func TestReadTogetherRetriesASlowRead(t *testing.T) {
	calls := 0
	run := func() (uint64, error) {
		calls++
		if calls == 1 {
			time.Sleep(5 * maxBracket) // stands for a preemption mid-read
		}
		return uint64(calls), nil
	}
	host := func() (CPUTimes, error) { return CPUTimes{Idle: 42}, nil }
	before := time.Now()
	s, err := readTogether(run, host)
	if err != nil {
		t.Fatal(err)
	}
	// Another read may be slow too on a loaded host: any but the first.
	if calls < 2 || s.RunUsageUsec < 2 {
		t.Errorf("%d reads, kept read %d: want a narrow one after the slow first", calls, s.RunUsageUsec)
	}
	if s.Host.Idle != 42 || s.Cores < 1 || s.HarnessCPUSec <= 0 {
		t.Errorf("snapshot %+v: want the host's times, the CPUs online and the harness's CPU", s)
	}
	if s.At.Sub(before) < 5*maxBracket {
		t.Errorf("stamped %v after the start: want within a later read, after the slow first", s.At.Sub(before))
	}
}
