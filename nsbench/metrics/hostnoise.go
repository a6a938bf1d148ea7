package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// HostReading is one reading, on one machine of a run across hosts, of
// what a Snapshot holds for this host's Noise: the CPU of the user
// processes there outside the run's cgroups and other than the reader
// (the run's agent on it), the machine's CPU times, its CPUs online, and
// when, by its clock. Only differences of two readings of one machine are
// used, so the machines' clocks need not agree.
type HostReading struct {
	Tasks TaskCPU
	Host  CPUTimes
	Cores int
	At    time.Time
}

// ReadHostNoise reads this machine's HostReading for the run whose
// cgroups are "/"+prefix and its scopes ("/"+prefix+"-client"), the
// calling process (the agent) left out as the harness is on one host.
func ReadHostNoise(prefix string) (HostReading, error) {
	var r HostReading
	var err error
	if r.Host, err = ReadHostCPU(); err != nil {
		return r, err
	}
	start := time.Now()
	if r.Tasks, err = ReadTaskCPU("/proc", os.Getpid(), "/"+prefix); err != nil {
		return r, err
	}
	r.At = start.Add(time.Since(start) / 2) // listing /proc takes milliseconds
	r.Cores = onlineCount()
	return r, nil
}

// SumNoise is the machines' Noise together: their background CPU and
// steal summed, over their capacity summed (Cores), in the mean of their
// windows. nil when any machine's is.
func SumNoise(per map[string]*Noise) *Noise {
	if len(per) == 0 {
		return nil
	}
	var sum Noise
	for _, n := range per {
		if n == nil {
			return nil
		}
		sum.BackgroundCPUSec += n.BackgroundCPUSec
		sum.StealSec += n.StealSec
		sum.WindowSec += n.WindowSec / float64(len(per))
		sum.Cores += n.Cores
	}
	return &sum
}

// taskCPUWire is TaskCPU as JSON, which has no struct map keys: a reading
// crosses from a host's agent as JSON.
type taskCPUWire struct {
	Procs [][6]uint64 `json:"procs,omitempty"` // PID, start, PPID, own, children, run (1) or not (0)
}

// MarshalJSON writes t's processes as a list.
func (t TaskCPU) MarshalJSON() ([]byte, error) {
	var w taskCPUWire
	for id, p := range t.Procs {
		run := uint64(0)
		if p.Run {
			run = 1
		}
		w.Procs = append(w.Procs, [6]uint64{uint64(id.PID), id.Start, uint64(p.Parent), p.Own, p.Children, run})
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (t *TaskCPU) UnmarshalJSON(b []byte) error {
	var w taskCPUWire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("task cpu: %w", err)
	}
	t.Procs = make(map[ProcID]TaskTicks, len(w.Procs))
	for _, p := range w.Procs {
		t.Procs[ProcID{PID: int(p[0]), Start: p[1]}] = TaskTicks{Parent: int(p[2]), Own: p[3], Children: p[4], Run: p[5] == 1}
	}
	return nil
}
