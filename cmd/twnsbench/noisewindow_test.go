package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The background figure is an estimate of what other programs ran during
// a sample. A test cannot know what that was on a shared host, so it
// reads the same window itself, at the same edges (metrics.Observe calls
// it right after each of the harness's readings), by its own code, two
// ways:
//
//   - lower: the CPU (utime+stime) that the user processes outside the
//     run's cgroups, other than this process, ran between the edges, for
//     those alive at both and those born in between and alive at the
//     end. It leaves out processes that ended meanwhile, which the figure
//     takes from their reapers, so the figure is at least this.
//   - upper: the host's busy time (wall time × CPUs online less idle,
//     iowait and steal, from /proc/stat) less the run's cgroups, this
//     process and the kernel threads. Besides what the figure counts it
//     holds interrupts taken on an idle CPU, processes of other PID
//     namespaces and whatever ended meanwhile, so the figure is at most
//     this, give or take the steal (the kernel takes the hypervisor's
//     steal out of a task's runtime only in part).
//
// Each bound carries a tolerance from the readings' resolution: /proc
// prints a process's utime and stime in whole 10 ms ticks, each rounded
// down, so a process's CPU over a window is off by less than 2 ticks in
// each reading of it, the figure's and the test's (roundingTicks);
// /proc/stat's idle, iowait and steal by less than a tick each; the test
// reads moments after the harness, so the CPUs online × that gap; and its
// own reading of the host, the run and itself takes time too.

// procKey tells a process from a later one with its PID.
type procKey struct {
	pid   int
	start uint64
}

// edgeReading is the test's own reading at one edge of a noise window,
// taken right after the harness's Snapshot.
type edgeReading struct {
	runCgroup string
	snap      metrics.Snapshot
	statAt    time.Time          // /proc/stat, the run's cgroups and this process read: the middle
	statTook  time.Duration      // and how long that took
	procsEnd  time.Time          // the walk of /proc ended
	bootTicks uint64             // CLOCK_BOOTTIME in ticks before the walk: later-born processes start after it
	cores     int                // cpuN lines of /proc/stat
	idle      uint64             // idle + iowait, ticks
	steal     uint64             // steal, ticks
	runUsec   uint64             // usage_usec of the run's cgroup and its scopes
	selfSec   float64            // this process's own CPU (the harness's)
	others    map[procKey]uint64 // utime+stime
	reaped    map[procKey]uint64 // cutime+cstime of the same processes
	kthreads  map[procKey]uint64
	hog       uint64 // utime+stime of the watched process
	hogAlive  bool
}

// windowWatch collects the test's readings at every edge the harness
// meters while it is set (metrics.Observe).
type windowWatch struct {
	root   string // the cgroup2 mount
	hogPID int    // a process whose CPU each window also reports (0: none)
	mu     sync.Mutex
	edges  []edgeReading
	errs   []error
}

// watchWindows reads every edge of the harness's noise windows until the
// test ends; hogPID, if not 0, is a process of the test's whose CPU per
// window is reported too.
func watchWindows(t *testing.T, hogPID int) *windowWatch {
	t.Helper()
	root, err := proc.Cgroup2Root()
	if err != nil {
		t.Fatal(err)
	}
	w := &windowWatch{root: root, hogPID: hogPID}
	t.Cleanup(metrics.Observe(w.observe))
	return w
}

func (w *windowWatch) observe(runCgroup string, s metrics.Snapshot) {
	e, err := w.read(runCgroup)
	e.snap = s
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.errs = append(w.errs, err)
		return
	}
	w.edges = append(w.edges, e)
}

func (w *windowWatch) read(runCgroup string) (edgeReading, error) {
	e := edgeReading{runCgroup: runCgroup, others: map[procKey]uint64{}, reaped: map[procKey]uint64{}, kthreads: map[procKey]uint64{}}
	// The host's, the run's and this process's CPU are set against each
	// other: read them close together, again when preempted meanwhile
	// (the narrowest of a few kept), and count the time taken in the
	// tolerance.
	for range 5 {
		r := e
		begin := time.Now()
		stat, err := os.ReadFile("/proc/stat")
		if err != nil {
			return e, err
		}
		if r.idle, r.steal, r.cores, err = parseIdle(stat); err != nil {
			return e, err
		}
		if r.runUsec, err = w.runUsage(runCgroup); err != nil {
			return e, err
		}
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			return e, err
		}
		r.selfSec = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
		r.statTook = time.Since(begin)
		r.statAt = begin.Add(r.statTook / 2)
		if e.statAt.IsZero() || r.statTook < e.statTook {
			e = r
		}
		if e.statTook <= time.Millisecond {
			break
		}
	}

	var boot unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		return e, err
	}
	e.bootTicks = uint64(boot.Nano()) / (1e9 / metrics.UserHZ)
	names, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return e, err
	}
	self := os.Getpid()
	for _, dir := range names {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue // ended meanwhile
		}
		cpu, reaped, start, kthread, ok := parseProcStat(b)
		if !ok {
			return e, fmt.Errorf("%s/stat: cannot read %q", dir, b)
		}
		if pid == w.hogPID {
			e.hog, e.hogAlive = cpu, true
		}
		k := procKey{pid, start}
		if kthread {
			e.kthreads[k] = cpu
			continue
		}
		cg, err := os.ReadFile(dir + "/cgroup")
		if err != nil {
			continue
		}
		if !inRunCgroup(cg, runCgroup) {
			e.others[k], e.reaped[k] = cpu, reaped
		}
	}
	e.procsEnd = time.Now()
	return e, nil
}

// runUsage is the usage_usec of the run's cgroup and of its scopes
// (name-client, …), which the figure also takes for the run's.
func (w *windowWatch) runUsage(runCgroup string) (uint64, error) {
	dirs, err := filepath.Glob(filepath.Join(w.root, runCgroup) + "-*")
	if err != nil {
		return 0, err
	}
	var sum uint64
	for _, d := range append([]string{filepath.Join(w.root, runCgroup)}, dirs...) {
		b, err := os.ReadFile(filepath.Join(d, "cpu.stat"))
		if err != nil {
			return 0, err
		}
		_, rest, ok := strings.Cut(string(b), "usage_usec ")
		v, err := strconv.ParseUint(strings.Fields(rest + " ")[0], 10, 64)
		if !ok || err != nil {
			return 0, fmt.Errorf("%s/cpu.stat: no usage_usec", d)
		}
		sum += v
	}
	return sum, nil
}

// parseIdle reads idle+iowait and steal of /proc/stat's "cpu" line and
// counts the cpuN lines (the CPUs online).
func parseIdle(stat []byte) (idle, steal uint64, cores int, err error) {
	for line := range strings.SplitSeq(string(stat), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 8 && f[0] == "cpu":
			var v [3]uint64
			for j, i := range []int{4, 5, 8} { // idle, iowait, steal
				if v[j], err = strconv.ParseUint(f[i], 10, 64); err != nil {
					return 0, 0, 0, fmt.Errorf("/proc/stat: %q: %w", line, err)
				}
			}
			idle, steal = v[0]+v[1], v[2]
		case len(f) > 0 && strings.HasPrefix(f[0], "cpu"):
			cores++
		}
	}
	if cores == 0 {
		return 0, 0, 0, errors.New("/proc/stat: no cpuN lines")
	}
	return idle, steal, cores, nil
}

// parseProcStat reads utime+stime (fields 14, 15), cutime+cstime (16,
// 17), the start time (22) and whether PF_KTHREAD is in the flags (9);
// fields count from the last ')' (the command may hold any).
func parseProcStat(b []byte) (cpu, reaped, start uint64, kthread, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, false, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return 0, 0, 0, false, false
	}
	field := func(k int) uint64 {
		v, err := strconv.ParseUint(string(f[k-3]), 10, 64)
		if err != nil {
			ok = false
		}
		return v
	}
	ok = true
	flags := field(9)
	cpu, reaped, start = field(14)+field(15), field(16)+field(17), field(22)
	return cpu, reaped, start, flags&0x00200000 != 0, ok
}

// inRunCgroup says whether /proc/PID/cgroup puts the process in the run's
// cgroup, below it, or in one of its scopes.
func inRunCgroup(file []byte, run string) bool {
	for line := range strings.SplitSeq(string(file), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p == run || strings.HasPrefix(p, run+"/") || strings.HasPrefix(p, run+"-")
		}
	}
	return false
}

// windowCheck is one sample's figure beside the test's reading of its
// window, all in CPU-s.
type windowCheck struct {
	figure, lower, upper float64
	tolLower, tolUpper   float64
	steal                float64 // the hypervisor's, in the upper tolerance
	hog                  float64 // the watched process's CPU; -1 when not watched or not alive at both edges
	capacity             float64 // the figure's window × its CPUs: 100 % of the host
	moved                int     // processes whose counters moved, ended ones and kernel threads among them
}

func (c windowCheck) pct(sec float64) float64 { return 100 * sec / c.capacity }

// String is "background 12.3 % (lower 11.0 − 1.2, upper 14.0 + 1.5 of
// which steal 0.2; 9 processes ran)".
func (c windowCheck) String() string {
	s := fmt.Sprintf("background %.1f %% (lower %.1f − %.1f, upper %.1f + %.1f of which steal %.1f; %d processes ran)",
		c.pct(c.figure), c.pct(c.lower), c.pct(c.tolLower), c.pct(c.upper), c.pct(c.tolUpper), c.pct(c.steal), c.moved)
	if c.hog >= 0 {
		s += fmt.Sprintf(", hog %.1f %%", c.pct(c.hog))
	}
	return s
}

// holds is whether the figure lies between the bounds, tolerances given.
func (c windowCheck) holds() bool {
	return c.figure >= c.lower-c.tolLower && c.figure <= c.upper+c.tolUpper
}

// check finds the window whose Noise the sample reports (the pair of
// consecutive edges of one run whose difference gives exactly its
// background CPU and window) and sets the figure against the test's
// reading of it.
func (w *windowWatch) check(s results.Sample) (windowCheck, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := errors.Join(w.errs...); err != nil {
		return windowCheck{}, fmt.Errorf("the test's own reading: %w", err)
	}
	if s.Noise == nil {
		return windowCheck{}, errors.New("no noise reading")
	}
	for i := 1; i < len(w.edges); i++ {
		e0, e1 := w.edges[i-1], w.edges[i]
		n := e1.snap.HostReading.NoiseSince(e0.snap.HostReading)
		if e0.runCgroup != e1.runCgroup || n == nil ||
			n.BackgroundCPUSec != s.Noise.BackgroundCPUSec || n.WindowSec != s.Noise.WindowSec {
			continue
		}
		return compareWindow(n, e0, e1), nil
	}
	return windowCheck{}, fmt.Errorf("no pair of the %d edges read gives background %v CPU-s over %v s",
		len(w.edges), s.Noise.BackgroundCPUSec, s.Noise.WindowSec)
}

func compareWindow(n *metrics.Noise, e0, e1 edgeReading) windowCheck {
	const tick = 1.0 / metrics.UserHZ
	c := windowCheck{figure: n.BackgroundCPUSec, capacity: n.WindowSec * float64(n.Cores), hog: -1}
	others := 0
	for k, now := range e1.others {
		before, alive := e0.others[k]
		switch {
		case alive:
		case k.start > e0.bootTicks: // born in the window
			before = 0
		default:
			continue // not read at the start: what it ran before is not known
		}
		if now != before {
			c.lower += float64(now-before) * tick
			others++
		}
	}
	// The figure also reads what ended meanwhile (gone, or in their
	// reapers' cutime): each a rounding more.
	counted := others
	for k := range e0.others {
		if _, alive := e1.others[k]; !alive {
			counted++
		}
	}
	for k, now := range e1.reaped {
		if before, ok := e0.reaped[k]; ok && now != before {
			counted++
		}
	}
	kthreadSec, kthreads := 0.0, 0
	for k, now := range e1.kthreads {
		if before, ok := e0.kthreads[k]; ok && now != before {
			kthreadSec += float64(now-before) * tick
			kthreads++
		}
	}
	c.moved = counted + kthreads
	wall := e1.statAt.Sub(e0.statAt).Seconds()
	steal := float64(e1.steal-e0.steal) * tick
	busy := wall*float64(e1.cores) - float64(e1.idle-e0.idle)*tick - steal
	c.upper = busy - float64(e1.runUsec-e0.runUsec)/1e6 - (e1.selfSec - e0.selfSec) - kthreadSec
	if e0.hogAlive && e1.hogAlive {
		c.hog = float64(e1.hog-e0.hog) * tick
	}
	// The test's walk ends at most this long after the harness's edge
	// (its At); any process may run meanwhile, on every CPU.
	gapEnd := e1.procsEnd.Sub(e1.snap.At).Seconds() * float64(e1.cores)
	gapStart := e0.statAt.Sub(e0.snap.At).Seconds() * float64(e0.cores)
	// Within the test's own reading of the host, the run and itself, the
	// time it took: half of it on the wall time, all of it between the
	// counters, at each edge.
	skew := 1.5 * (e0.statTook + e1.statTook).Seconds() * float64(e1.cores)
	c.tolLower = gapEnd + roundingTicks(others, 2)*tick
	// The hypervisor's steal is not the host's work, but the kernel
	// takes it out of a task's runtime only in part: on this project's
	// VMs, with steal at 7-41 % of the CPUs over 2-3 s, the tasks' CPU
	// summed from /proc exceeded busy time less steal by up to a fifth
	// of the steal, and in 30 sample windows with steal the figure
	// exceeded the upper bound by up to half of it (at most 4.3 % of the
	// host in 34 windows without).
	c.steal = steal
	c.tolUpper = gapStart + skew + roundingTicks(counted+kthreads, 1)*tick + 3*tick + steal
	return c
}

// roundingTicks bounds, in ticks, the rounding error of the CPU that n
// processes ran over a window, summed from /proc by `readings` readers
// (the figure, the test) each reading both edges. /proc rounds a
// process's utime and stime down to whole ticks, so its CPU over a
// window is off by under 2 ticks in each reader's sum: 2·n·readings at
// worst. The errors are independent and near uniform (a reading's error
// is the sum of two fractions of a tick, variance 1/6; a difference of
// two readings, 1/3), so their sum lies within 5σ = 5·sqrt(n·readings/3)
// ticks but about once in 2 million: the smaller of the two.
func roundingTicks(n, readings int) float64 {
	return min(2*float64(n*readings), 5*math.Sqrt(float64(n*readings)/3))
}

// checkWindows sets every timed sample's background against the test's
// reading of its window, and returns a line per sample for the log.
func checkWindows(t *testing.T, w *windowWatch, doc *results.Document) []string {
	t.Helper()
	var lines []string
	for _, s := range doc.Samples {
		if s.Instrument == "ready" {
			continue
		}
		name := fmt.Sprintf("%s/%s/%d", s.Transport, s.Instrument, s.Run)
		c, err := w.check(s)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if math.Abs(c.pct(c.figure)-s.Noise.BackgroundPct) > 1e-9 {
			t.Errorf("%s: background_pct %v, want %v (background_cpu_sec over window_sec × CPUs)", name, s.Noise.BackgroundPct, c.pct(c.figure))
		}
		if !c.holds() {
			t.Errorf("%s: %s: outside the test's own reading of the same window", name, c)
		}
		lines = append(lines, name+": "+c.String())
	}
	return lines
}
