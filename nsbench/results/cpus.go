package results

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
