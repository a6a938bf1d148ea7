package results

// RunConfig is what a run was asked to do, in the words of `run`'s flags.
// Its groups are embedded: their fields sit at the top level of config in
// JSON, in the order they had before they were grouped.
type RunConfig struct {
	Transports  []string `json:"transports"`  // rows, NAME or NAME:VARIANT (sets expanded)
	WAN         []string `json:"wan"`         // --wan SPECs, or ["off"]
	Instruments []string `json:"instruments"` // --instruments (ready included when it ran)
	CellRuns
	Measure
	Network
	Schedule
	Impairment string `json:"impairment"` // as asked: auto, netem or userspace
	// Seed is the loss seed the run used (drawn when none was given).
	Seed *uint64 `json:"seed,omitempty"`
	// Options are the transports' options that are not host paths
	// (--wireguard auto, …).
	Options map[string]string `json:"options,omitempty"`
}

// CellRuns is how many runs each cell was asked for: a count, or "auto"
// with the precision its plan aims at and its bound (nsbench.AutoRuns).
type CellRuns struct {
	Runs        string  `json:"runs"` // a count, or "auto"
	Precision   float64 `json:"precision,omitempty"`
	PrecisionMs float64 `json:"precision_ms,omitempty"`
	MaxRuns     int     `json:"max_runs,omitempty"`
}

// Measure is how much each sample measures (nsbench.Measure, its runs
// apart in CellRuns).
type Measure struct {
	SizeBytes   int64   `json:"size_bytes"`
	DurationSec float64 `json:"duration_sec"`
	WarmupSec   float64 `json:"warmup_sec"`
}

// Network is how the run set the roles' network stacks.
type Network struct {
	Congestion string `json:"congestion"`
	// NIC is "reference" (tso/gso/gro off, gso_max_segs 1) or "own" (the
	// interfaces as they were); absent before --nic: the reference's.
	NIC string `json:"nic,omitempty"`
	// Pin is --pin's layout ("same", "split"); absent: off.
	Pin string `json:"pin,omitempty"`
}

// Schedule is the run's order and what it measured besides the cells
// (nsbench.Schedule).
type Schedule struct {
	Order string `json:"order"`
	// DriftProbe is false when the run was asked not to probe the host
	// at its start and end (--drift-probe=false); absent: probed, as in
	// every file before the flag.
	DriftProbe *bool `json:"drift_probe,omitempty"`
}
