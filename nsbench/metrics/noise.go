package metrics

import (
	"fmt"
	"time"
)

// Noise is what the host did besides this run during a sample.
//
// Background is the CPU that other programs ran: the window's CPU of the
// user processes in view outside the run's cgroup, the harness left out
// (ReadTaskCPU: their threads' and their reaped children's utime+stime).
// It is the tasks' runtime on the scheduler's clock, whole processes
// counted or not, so none of the run's own work can leak in or out of it
// however the kernel files it: without CONFIG_IRQ_TIME_ACCOUNTING
// (Debian's kernels and this project's) a task's runtime holds the
// softirqs run in its context — a veth transmit runs the receiver's
// NET_RX softirq in the sender's — which /proc/stat's tick sampling files
// as softirq. Two estimates before this one set the run's cgroup against
// /proc/stat and came out wrong under network load: user+nice+system less
// the run, the harness and the kernel threads was −6 % to −43 % of an
// idle 2-core host (the run's softirq was in its runtime but not in those
// columns; ksoftirqd's too), enough to hide a busy loop's whole core;
// busy time as wall time less idle, less the same, was +5.5 % on an idle
// host under TCP_RR (about 3·10⁴ transactions/s), because interrupts and
// wake-ups that land on an idle CPU run in no task: the run's own
// overhead, counted as another program's.
//
// What it leaves out: interrupt and softirq work done in no task (the
// run's, chiefly; also another program's network traffic landing on an
// idle CPU), kernel threads (the kernel's WireGuard and IPsec crypto
// workers run there), processes this PID namespace's /proc does not show
// (an ancestor or sibling namespace's, when the harness runs in a
// container), and what a process ran in the window before it was reaped
// where its CPU goes into no counted process (its parent ignores
// SIGCHLD; the harness or the run reaps it). It follows each process
// across the two readings (TaskCPU.TicksSince), so it is never below
// zero: a reaped process's history is taken out only of the reaper whose
// reaped CPU took it in. It can read high, per such process, by its CPU
// before the window when it was orphaned between the readings and reaped
// by a subreaper or init the readings could not tell, and by its lifetime
// CPU when it was reaped while each of ReadTaskCPU's maxScans passes
// read. Cores is the CPUs online.
type Noise struct {
	BackgroundCPUSec float64
	StealSec         float64
	WindowSec        float64
	Cores            int
}

// BackgroundPct is background CPU as a share of the host's capacity over
// the window (100 = every core busy with other work).
func (n Noise) BackgroundPct() float64 { return n.share(n.BackgroundCPUSec) }

// StealPct is the time a hypervisor ran others on this host's CPUs, as a
// share of its capacity.
func (n Noise) StealPct() float64 { return n.share(n.StealSec) }

func (n Noise) share(sec float64) float64 {
	if n.WindowSec <= 0 || n.Cores <= 0 {
		return 0
	}
	return 100 * sec / (n.WindowSec * float64(n.Cores))
}

// noiseSince is the host's work besides the run from prev to s; nil when
// the CPUs online changed between them (the capacity is then not known).
func (s Snapshot) noiseSince(prev Snapshot) *Noise { return s.HostReading.NoiseSince(prev.HostReading) }

// NoiseSince is the machine's Noise from prev to s; nil when its CPUs
// online changed (the capacity is then not known).
func (s HostReading) NoiseSince(prev HostReading) *Noise {
	if s.Cores <= 0 || s.Cores != prev.Cores {
		return nil
	}
	sec := func(now, before uint64) float64 { return float64(int64(now-before)) / UserHZ }
	return &Noise{
		BackgroundCPUSec: float64(s.Tasks.TicksSince(prev.Tasks)) / UserHZ,
		StealSec:         sec(s.Host.Steal, prev.Host.Steal),
		WindowSec:        s.At.Sub(prev.At).Seconds(),
		Cores:            s.Cores,
	}
}

// maxBracket bounds the time readTogether may take; maxReads how often it
// tries. Reading /proc/stat and a cgroup's cpu.stat takes about 0.1 ms; on
// a loaded host 1 read in 50 took over 1 ms (preempted), up to 30 ms.
const (
	maxBracket = time.Millisecond
	maxReads   = 5
)

// readTogether reads the run's cgroup, the host's CPU times and the
// harness's own CPU close together and stamps them with the middle of the
// bracket, the window's edge that the host's busy CPU and steal are set
// against. A read over maxBracket (preempted) is tried again, up to
// maxReads times, and the narrowest kept.
func readTogether(run func() (uint64, error), host func() (CPUTimes, error)) (Snapshot, error) {
	var best Snapshot
	narrowest := time.Duration(-1)
	for range maxReads {
		var s Snapshot
		var err error
		start := time.Now()
		if s.RunUsageUsec, err = run(); err != nil {
			return Snapshot{}, fmt.Errorf("read run cpu: %w", err)
		}
		if s.Host, err = host(); err != nil {
			return Snapshot{}, err
		}
		if s.HarnessCPUSec, err = SelfCPUSec(); err != nil {
			return Snapshot{}, err
		}
		took := time.Since(start)
		s.At = start.Add(took / 2)
		if narrowest < 0 || took < narrowest {
			best, narrowest = s, took
		}
		if took <= maxBracket {
			break
		}
	}
	best.Cores = onlineCount()
	return best, nil
}
