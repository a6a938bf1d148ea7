package metrics

import (
	"encoding/json"
	"maps"
	"math"
	"testing"
	"time"
)

// A run across two machines: each one's Noise from its own readings (its
// own clock: the second machine's is an hour off), and the two together
// over their summed capacity. A machine read only once has no Noise, and
// then neither has the sum: a figure over part of the run's machines
// would pass for the whole.
func TestMachinesNoise(t *testing.T) {
	at := time.Unix(1000, 0)
	read := func(ticks, steal uint64, cores int, at time.Time) HostReading {
		return HostReading{Tasks: oneProc(ticks), Host: CPUTimes{Steal: steal}, Cores: cores, At: at}
	}
	prev := Snapshot{Machines: map[string]HostReading{
		"root@m1": read(1000, 0, 2, at),
		"root@m2": read(500, 40, 4, at.Add(time.Hour)),
	}}
	now := Snapshot{Machines: map[string]HostReading{
		"root@m1": read(1100, 0, 2, at.Add(2*time.Second)),           // 1 CPU-s of 4
		"root@m2": read(560, 60, 4, at.Add(time.Hour+2*time.Second)), // 0.6 CPU-s and 0.2 stolen of 8
	}}
	d := now.Sub(prev)
	m1, m2 := d.MachineNoise["root@m1"], d.MachineNoise["root@m2"]
	if m1 == nil || m2 == nil {
		t.Fatalf("machine noise %v", d.MachineNoise)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("m1 background %", m1.BackgroundPct(), 25)
	near("m2 background %", m2.BackgroundPct(), 7.5)
	near("m2 steal %", m2.StealPct(), 2.5)
	if d.Noise == nil {
		t.Fatal("no noise for the run")
	}
	near("run background CPU-s", d.Noise.BackgroundCPUSec, 1.6)
	near("run background %", d.Noise.BackgroundPct(), 100*1.6/(2*6))
	near("run window", d.Noise.WindowSec, 2)

	delete(prev.Machines, "root@m2")
	d = now.Sub(prev)
	if d.Noise != nil || d.MachineNoise["root@m2"] != nil || d.MachineNoise["root@m1"] == nil {
		t.Errorf("m2 read once: run noise %v, machines %v; want none for the run and m2, m1's", d.Noise, d.MachineNoise)
	}
}

// A reading crosses from a host's agent as JSON: its processes (struct
// keys, which JSON maps cannot have) come back whole.
func TestTaskCPUJSON(t *testing.T) {
	in := TaskCPU{Procs: map[ProcID]TaskTicks{
		{PID: 302, Start: 1302}: {Parent: 1, Own: 40, Children: 2, Run: true},
		{PID: 7, Start: 9}:      {Parent: 1, Own: 1}}}
	b, err := json.Marshal(HostReading{Tasks: in, Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	var out HostReading
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(out.Tasks.Procs, in.Procs) || out.Cores != 2 {
		t.Errorf("round trip %s gave %+v, want %+v", b, out.Tasks, in)
	}
}
