package results

// SelfCheckFile is `twnsbench selfcheck`'s document inside its output
// directory.
const SelfCheckFile = "selfcheck.json"

// SelfCheck is the harness parity check: the same tool measured through
// the harness's own instrument code and as a bare command, in pairs.
type SelfCheck struct {
	Generated   string  `json:"generated"`
	Kernel      string  `json:"kernel"`
	CPUModel    string  `json:"cpu_model"`
	Cores       int     `json:"cores"`
	Pairs       int     `json:"pairs"`
	DurationSec float64 `json:"duration_sec"`
	// Tolerance is how far from 1 the ratio's interval may reach and
	// still pass (0.05: within 0.95–1.05).
	Tolerance float64 `json:"tolerance"`
	// Direct is the bare command's form, e.g. "sh -c 'ip netns exec NS
	// iperf3 …'" with no cgroup and no harness launcher around it.
	Direct string `json:"direct"`
	// CapBps, when set, capped the path at this many bits/s for the whole
	// check (selfcheck --cap).
	CapBps uint64 `json:"cap_bps,omitempty"`
	// DirectCapBps, when set, capped the path at this many bits/s while
	// the direct side measured (selfcheck --cap-direct): a known-bad case
	// whose verdict should be fail.
	DirectCapBps uint64           `json:"direct_cap_bps,omitempty"`
	Checks       []SelfCheckRatio `json:"checks"`
	// Verdict is the whole check's: "pass", "fail" or "inconclusive".
	Verdict string `json:"verdict"`
}

// SelfCheckRatio is one instrument's pairs and their verdict.
type SelfCheckRatio struct {
	Instrument string    `json:"instrument"`
	Unit       string    `json:"unit"`
	Harness    []float64 `json:"harness"`
	Direct     []float64 `json:"direct"`
	// Ratios are harness ÷ direct per pair; Ratio is their median and
	// MedianCI its order-statistic interval.
	Ratios []float64 `json:"ratios"`
	Ratio  float64   `json:"ratio"`
	MedianCI
	DirectCV float64 `json:"direct_cv"`
	Verdict  string  `json:"verdict"`
}

// Self-check verdicts.
const (
	VerdictPass         = "pass"
	VerdictFail         = "fail"
	VerdictInconclusive = "inconclusive"
)
