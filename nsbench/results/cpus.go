package results

import (
	"maps"
	"slices"
	"strings"
)

// CPUs are the CPUs of the run's host and how the run used them.
type CPUs struct {
	// CPUsOnline are the host's CPUs online (/sys/devices/system/cpu/online:
	// those /proc/stat's host CPU sums over); Affinity those the run could
	// use (the harness's sched_getaffinity, which its tools and daemons
	// inherit unless pinned). Cores, the reference's field, is
	// runtime.NumCPU: the affinity's count.
	CPUsOnline *CPUSet `json:"cpus_online,omitempty"`
	Affinity   *CPUSet `json:"cpu_affinity,omitempty"`
	// Pin, with --pin, is the CPUs each role's processes were kept on;
	// absent: where the scheduler put them, within Affinity.
	Pin *Pin `json:"cpu_pin,omitempty"`
}

// Pin is a --pin layout as the run applied it: each role's processes
// (daemons, tools, tunnels, their threads and children) on its CPUs.
type Pin struct {
	Layout string `json:"layout"` // "same" or "split"
	// Roles are each role's CPUs in the kernel's list form ("0").
	Roles map[string]string `json:"roles"`
}

// CPUSet is a set of logical CPUs in the kernel's list form ("0-3,6") and
// its size.
type CPUSet struct {
	List  string `json:"list"`
	Count int    `json:"count"`
}

// String is the layout and each role's CPUs ("split: client 0, relay 1,
// server 1"), or "off" for a run whose roles were not pinned (nil): what
// compare and the history tell runs apart by.
func (p *Pin) String() string {
	if p == nil {
		return "off"
	}
	var roles []string
	for _, name := range slices.Sorted(maps.Keys(p.Roles)) {
		roles = append(roles, name+" "+p.Roles[name])
	}
	return p.Layout + ": " + strings.Join(roles, ", ")
}
