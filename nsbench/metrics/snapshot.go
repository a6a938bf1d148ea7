package metrics

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Snapshot is one reading of every cumulative counter a sample uses.
type Snapshot struct {
	HostBusyTicks uint64            // CPUTimes.BusyTicks of the whole host
	RoleUsageUsec map[string]uint64 // role → its cgroup's cpu.stat usage_usec
	// TransportUsageUsec is the usage_usec of the running transport's own
	// cgroup in each role (its processes and their children only).
	TransportUsageUsec map[string]uint64
	ClientRxBytes      uint64  // rx_bytes of the client's interface
	HarnessCPUSec      float64 // SelfCPUSec: the harness's own CPU
	// RunUsageUsec is the run's whole cgroup (every role, transport and
	// the impairment); HostReading this host's CPU times (Host), the CPU
	// of the user processes this PID namespace sees outside the run and
	// the harness (Tasks, ReadTaskCPU: the host's work for others, Noise),
	// its CPUs online and when Host was read (At).
	RunUsageUsec uint64
	HostReading
	// Machines are the readings of a run across hosts' machines, by
	// machine (Sampler.Machines): their Noise, each by its own clock.
	Machines map[string]HostReading
}

// Delta is what happened between two snapshots: a sample's metrics.
type Delta struct {
	HostCPUSec float64 // busy CPU-s of the host, all roles and the kernel, steal excluded
	// StealSec is the CPU-s a hypervisor gave other guests meanwhile,
	// counted apart from HostCPUSec: not this host's work.
	StealSec   float64
	RoleCPUSec map[string]float64 // role → CPU-s of its cgroup
	// TransportCPUSec is role → CPU-s of the transport's own processes.
	TransportCPUSec map[string]float64
	ClientRxBytes   int64   // bytes the client's interface received
	HarnessCPUSec   float64 // CPU-s the harness itself used
	// Noise is the host's work for others meanwhile; nil when the
	// snapshots lack the run's cgroup. Across hosts it is the machines'
	// together (SumNoise) and MachineNoise each one's.
	Noise        *Noise
	MachineNoise map[string]*Noise
}

// Sub returns the change from prev to s (s is the later snapshot).
//
// A role must be in both snapshots to have a delta. A role that only one of
// them holds is left out of RoleCPUSec, never reported as its whole
// cumulative count: the result then lacks that role rather than carrying a
// wrong number. A counter that went backwards (its cgroup or link was
// replaced between the reads) gives a negative value, reported as it is
// rather than hidden; callers must not use it as a measurement.
func (s Snapshot) Sub(prev Snapshot) Delta {
	d := Delta{
		// Subtract in uint64 and reinterpret: exact for any difference
		// below 2^63, and negative when the counter went backwards.
		HostCPUSec:    float64(int64(s.HostBusyTicks-prev.HostBusyTicks)) / UserHZ,
		StealSec:      float64(int64(s.Host.Steal-prev.Host.Steal)) / UserHZ,
		RoleCPUSec:    make(map[string]float64, len(s.RoleUsageUsec)),
		ClientRxBytes: int64(s.ClientRxBytes - prev.ClientRxBytes),
		HarnessCPUSec: s.HarnessCPUSec - prev.HarnessCPUSec,
	}
	for role, now := range s.RoleUsageUsec {
		if before, ok := prev.RoleUsageUsec[role]; ok {
			d.RoleCPUSec[role] = float64(int64(now-before)) / 1e6
		}
	}
	if s.RunUsageUsec > 0 && prev.RunUsageUsec > 0 {
		d.Noise = s.noiseSince(prev)
	}
	if len(s.Machines) > 0 {
		d.MachineNoise = map[string]*Noise{}
		for m, now := range s.Machines {
			if before, ok := prev.Machines[m]; ok {
				d.MachineNoise[m] = now.NoiseSince(before)
			} else {
				d.MachineNoise[m] = nil // not in both: not known
			}
		}
		d.Noise = SumNoise(d.MachineNoise)
	}
	for role, now := range s.TransportUsageUsec {
		if before, ok := prev.TransportUsageUsec[role]; ok {
			if d.TransportCPUSec == nil {
				d.TransportCPUSec = map[string]float64{}
			}
			d.TransportCPUSec[role] = float64(int64(now-before)) / 1e6
		}
	}
	return d
}

// String formats the delta for logs: "host 1.23 CPU-s, client 0.50 CPU-s,
// server 0.40 CPU-s, rx 1048576 B, harness 0.01 CPU-s" (roles sorted).
func (d Delta) String() string {
	parts := []string{fmt.Sprintf("host %.2f CPU-s", d.HostCPUSec)}
	for _, r := range slices.Sorted(maps.Keys(d.RoleCPUSec)) {
		parts = append(parts, fmt.Sprintf("%s %.2f CPU-s", r, d.RoleCPUSec[r]))
	}
	parts = append(parts,
		fmt.Sprintf("rx %d B", d.ClientRxBytes),
		fmt.Sprintf("harness %.2f CPU-s", d.HarnessCPUSec))
	return strings.Join(parts, ", ")
}

// Sampler reads a Snapshot: the host's busy ticks and the harness's own CPU
// always, and the counters it is given. A nil func is skipped (its role or
// counter is then absent from the snapshot).
type Sampler struct {
	Roles map[string]func() (uint64, error) // role → usage_usec, e.g. (*proc.Cgroup).UsageUsec
	// Transport is role → usage_usec of the running transport's cgroups;
	// the orchestrator sets it per transport.
	Transport     map[string]func() (uint64, error)
	ClientRxBytes func() (uint64, error) // rx_bytes of the client's interface
	// Run reads the run's whole cgroup's usage_usec; nil: no Noise.
	// RunCgroup names that cgroup as /proc/PID/cgroup does
	// ("/twnsb-3fa9c1"): the processes there are the run's, not another
	// program's (Noise).
	Run       func() (uint64, error)
	RunCgroup string
	// Machines reads every machine of a run across hosts (its agent's
	// ReadHostNoise); nil on one host. Their CPU times together are then
	// the host figures, in place of this host's /proc/stat.
	Machines func() (map[string]HostReading, error)
}

// Snapshot reads every counter once. On error it returns every reader's
// failure and a zero Snapshot, which must not be subtracted.
func (sm *Sampler) Snapshot() (Snapshot, error) {
	var s Snapshot
	var errs []error
	if len(sm.Roles) > 0 {
		s.RoleUsageUsec = make(map[string]uint64, len(sm.Roles))
	}
	for role, read := range sm.Roles {
		if read == nil {
			continue
		}
		v, err := read()
		if err != nil {
			errs = append(errs, fmt.Errorf("read role %s cpu: %w", role, err))
			continue
		}
		s.RoleUsageUsec[role] = v
	}
	for role, read := range sm.Transport {
		v, err := read()
		if err != nil {
			errs = append(errs, fmt.Errorf("read transport cpu in %s: %w", role, err))
			continue
		}
		if s.TransportUsageUsec == nil {
			s.TransportUsageUsec = map[string]uint64{}
		}
		s.TransportUsageUsec[role] = v
	}
	if sm.ClientRxBytes != nil {
		v, err := sm.ClientRxBytes()
		if err != nil {
			errs = append(errs, fmt.Errorf("read client rx bytes: %w", err))
		}
		s.ClientRxBytes = v
	}
	if sm.Run != nil {
		together, terr := readTogether(sm.Run, ReadHostCPU)
		tasks, werr := ReadTaskCPU("/proc", os.Getpid(), sm.RunCgroup)
		errs = append(errs, terr, werr)
		s.Tasks, s.RunUsageUsec, s.Host = tasks, together.RunUsageUsec, together.Host
		s.HarnessCPUSec, s.Cores, s.At = together.HarnessCPUSec, together.Cores, together.At
	} else {
		s.At = time.Now()
		var serr error
		s.HarnessCPUSec, serr = SelfCPUSec()
		errs = append(errs, serr)
		if sm.Machines == nil {
			var herr error
			s.Host, herr = ReadHostCPU()
			errs = append(errs, herr)
		}
	}
	if sm.Machines != nil {
		m, err := sm.Machines()
		errs = append(errs, err)
		s.Machines = m
		for _, r := range m {
			s.Host = s.Host.Plus(r.Host)
		}
	}
	s.HostBusyTicks = s.Host.BusyTicks()
	if err := errors.Join(errs...); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	if f := observer.Load(); f != nil && sm.Run != nil {
		(*f)(sm.RunCgroup, s)
	}
	return s, nil
}

var observer atomic.Pointer[func(runCgroup string, s Snapshot)]

// Observe has f called with every Snapshot that reads a run's cgroup (an
// edge of a sample's Noise window) and that cgroup's name, right after the
// Snapshot is read and on its goroutine, until stop is called. It lets a
// test read its own meters at the same edges and check the Noise against
// them: the Noise is an estimate, and only a reading of the same window
// tells a wrong one from a busy host.
func Observe(f func(runCgroup string, s Snapshot)) (stop func()) {
	observer.Store(&f)
	return func() { observer.Store(nil) }
}
