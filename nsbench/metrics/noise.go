package metrics

import (
	"fmt"
	"time"
)

// Noise is what the host did besides this run during a sample.
//
// Background is the host's busy time less every task this run accounts
// for: busy = the window's wall time × the online CPUs, less their idle,
// iowait and steal time; less the run's cgroup (usage_usec), the
// harness's own CPU and the kernel threads in view (the kernel's
// WireGuard and IPsec crypto workers and ksoftirqd run there). What
// remains is another program's work, and interrupt work done on a CPU
// that was otherwise idle (in no task: a timer, a device's interrupt).
// In a PID namespace that hides the kernel threads, their time counts as
// background.
//
// Every term is on one basis, time the CPUs ran something, by the
// scheduler's clock. The run's usage_usec is its tasks' runtime, which,
// without CONFIG_IRQ_TIME_ACCOUNTING (the default of Debian's kernels and
// of this project's), holds the interrupts and softirqs the kernel ran in
// their context: a veth transmit runs the receiver's NET_RX softirq in the
// sender's context. /proc/stat's tick sampling files that time as softirq,
// not as user or system; ksoftirqd's too, though it is in the kernel
// threads' utime+stime. Set against user+nice+system alone (the estimate
// before), the run and ksoftirqd were subtracted for work that sum never
// held: under iperf3 through SSH or WireGuard on an otherwise idle 2-core
// host every sample came out at −6 % to −43 % of the host, enough to hide
// a busy loop's whole core. Idle and iowait, unlike the busy columns, are
// measured, not sampled, on a tickless kernel (NO_HZ: /proc/stat reads
// get_cpu_idle_time_us), so busy as wall time less idle carries no
// sampling error of the 4 ms tick (500 ticks a second on 2 CPUs sampling
// a half-busy host: a standard deviation of 2 % of it); the run's, the
// host's and the harness's counters are read together within a bracket
// of at most maxBracket (readTogether). The kernel's own root-cgroup
// usage likewise counts irq and softirq time as busy. Steal is taken off
// busy because the tasks' runtime leaves it out too (with
// PARAVIRT_TIME_ACCOUNTING, as here).
//
// It stays an estimate: /proc/stat prints 10 ms units, so it can come out
// below zero by a few hundredths of a CPU-s, and is kept as it came out,
// never clamped, so that an estimate below zero can be told from a
// measured 0. Cores is the CPUs online, whose idle time /proc/stat sums.
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
func (s Snapshot) noiseSince(prev Snapshot) *Noise {
	if s.Cores <= 0 || s.Cores != prev.Cores {
		return nil
	}
	window := s.At.Sub(prev.At).Seconds()
	sec := func(now, before uint64) float64 { return float64(int64(now-before)) / UserHZ }
	idle := sec(s.Host.Idle+s.Host.IOWait, prev.Host.Idle+prev.Host.IOWait)
	steal := sec(s.Host.Steal, prev.Host.Steal)
	busy := window*float64(s.Cores) - idle - steal
	run := float64(int64(s.RunUsageUsec-prev.RunUsageUsec)) / 1e6
	kthreads := float64(s.Kthreads.TicksSince(prev.Kthreads)) / UserHZ
	harness := s.HarnessCPUSec - prev.HarnessCPUSec
	return &Noise{
		BackgroundCPUSec: busy - run - harness - kthreads,
		StealSec:         steal,
		WindowSec:        window,
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
// bracket: Background sets the idle time against the wall time times the
// CPUs, so a read preempted for 20 ms would move 40 ms of a 2-core host
// from idle to busy. A read over maxBracket is tried again, up to
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
