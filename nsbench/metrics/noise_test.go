package metrics

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
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
		Tasks: TaskCPU{Ticks: 900}, Cores: 2, At: time.Unix(100, 0)}}
	// 2 s on 2 CPUs: other programs' tasks +1.2 s → background 1.2 s,
	// whatever the run (+1.5 s) and the host's columns did.
	now := Snapshot{RunUsageUsec: 6_500_000, HarnessCPUSec: 1.5, HostReading: HostReading{
		Host:  CPUTimes{User: 1100, System: 550, SoftIRQ: 90, Idle: 2040, IOWait: 20, Steal: 20},
		Tasks: TaskCPU{Ticks: 1020}, Cores: 2, At: time.Unix(102, 0)}}
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

// A background estimate below zero (a counted process reaped by no one
// counted took its history with it) is kept as it came out, not clamped
// to 0, and its share is negative too: a reader can tell it from a
// measured 0.
func TestSubNoiseBelowZeroKept(t *testing.T) {
	prev := Snapshot{RunUsageUsec: 5_000_000, HostReading: HostReading{Tasks: TaskCPU{Ticks: 500}, Cores: 1, At: time.Unix(100, 0)}}
	now := Snapshot{RunUsageUsec: 6_050_000, HostReading: HostReading{Tasks: TaskCPU{Ticks: 495}, Cores: 1, At: time.Unix(101, 0)}}
	d := now.Sub(prev)
	if d.Noise == nil {
		t.Fatal("no noise")
	}
	if got := d.Noise.BackgroundCPUSec; got > -0.049 || got < -0.051 {
		t.Errorf("background = %v CPU-s, want -0.05 (not clamped)", got)
	}
	if got := d.Noise.BackgroundPct(); got >= 0 {
		t.Errorf("background share %v %%: want below zero", got)
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
	if want := uint64(5 + 7 + 20 + 2); before.Ticks != want {
		t.Errorf("sum %d ticks, want %d: other programs' own and reaped CPU only", before.Ticks, want)
	}
	if want := map[ProcID]uint64{{302, 1302}: 40, {500, 1500}: 8}; !maps.Equal(before.RunOrphans, want) {
		t.Errorf("run's orphans %v, want %v", before.RunOrphans, want)
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

// A walk of /proc during which a listed process vanished before it was
// read (reaped meanwhile: its CPU may be counted nowhere, or twice at the
// next reading) is made again, and a walk without one kept; when every
// walk meets one, the one with the fewest. A process listed but gone is
// counted as vanished.
func TestReadTaskCPUWalksAgainAfterAReap(t *testing.T) {
	type walk struct {
		ticks    uint64
		vanished int
	}
	run := func(walks []walk) (TaskCPU, int) {
		calls := 0
		got, err := settledWalk(func() (TaskCPU, int, error) {
			w := walks[calls]
			calls++
			return TaskCPU{Ticks: w.ticks}, w.vanished, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, calls
	}
	// A compiler with 1 CPU-s (100 ticks) reaped mid-walk: missing from
	// the first two walks' sums.
	if got, calls := run([]walk{{500, 1}, {510, 2}, {612, 0}, {700, 0}, {800, 0}}); got.Ticks != 612 || calls != 3 {
		t.Errorf("kept %d ticks after %d walks, want the third walk's 612, the first without a reap", got.Ticks, calls)
	}
	if got, calls := run([]walk{{1, 3}, {2, 1}, {3, 2}, {4, 1}, {5, 2}}); got.Ticks != 4 || calls != maxWalks {
		t.Errorf("kept %d ticks after %d walks, want 4 after %d: the last of the fewest vanished", got.Ticks, calls, maxWalks)
	}
	boom := errors.New("boom")
	if _, err := settledWalk(func() (TaskCPU, int, error) { return TaskCPU{}, 0, boom }); !errors.Is(err, boom) {
		t.Errorf("err %v, want the walk's %v", err, boom)
	}

	dir := t.TempDir()
	writeProc(t, dir, map[int]fakeProc{1: {0, 0x400100, 3, 2, 4, 3, "/init.scope"}})
	if err := os.Mkdir(filepath.Join(dir, "77"), 0o755); err != nil { // listed, its files gone
		t.Fatal(err)
	}
	got, vanished, err := walkTasks(dir, 100, "/twnsb-3fa9c1")
	if err != nil || got.Ticks != 12 || vanished != 1 {
		t.Errorf("walk: %d ticks, %d vanished, %v; want 12 and 1", got.Ticks, vanished, err)
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
