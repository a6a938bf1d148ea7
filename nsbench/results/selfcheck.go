package results

// SelfCheckFile is `twnsbench selfcheck`'s document inside its output
// directory.
const SelfCheckFile = "selfcheck.json"

// SelfCheck is the harness parity check: the same tool measured through
// the harness's own instrument code and as a bare command, in pairs.
type SelfCheck struct {
	Generated string `json:"generated"`
	SelfCheckMachine
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
	// RPM is the cross-check of twnsbench's RPM client against an
	// independent one; it has no part in the verdict.
	RPM *RPMCrossCheck `json:"rpm_cross_check,omitempty"`
}

// SelfCheckMachine is the machine the check ran on (its keys inline).
type SelfCheckMachine struct {
	Kernel   string `json:"kernel"`
	CPUModel string `json:"cpu_model"`
	Cores    int    `json:"cores"`
}

// RPMCrossCheck is twnsbench's RPM client and goresponsiveness, an
// independent implementation run as an external program, against the
// same rpm server on the plain path, one after the other in Runs pairs
// (alternating which goes first), each capped at Connections
// load-generating connections per direction.
type RPMCrossCheck struct {
	// Tool is goresponsiveness's path and Args its arguments; Skipped,
	// when set, is why it did not run (then Runs is empty).
	Tool        string        `json:"tool"`
	Args        string        `json:"args,omitempty"`
	Skipped     string        `json:"skipped,omitempty"`
	Connections int           `json:"connections"`
	LimitSec    float64       `json:"limit_sec"` // each client's time limit (goresponsiveness's per stage)
	Runs        []RPMCrossRun `json:"runs"`
}

// RPMCrossRun is one pair: each client's RPM (trimmed means), the probe
// times behind it (ms; foreign per round trip: (TCP+TLS+HTTP)/3) and its
// total goodput. Theirs is goresponsiveness's own figure, 60000 /
// ((self+foreign)/2); TheirsDraft the draft's combination of its means,
// as ours is computed.
type RPMCrossRun struct {
	Ours            float64 `json:"ours_rpm"`
	Theirs          float64 `json:"theirs_rpm"`
	TheirsDraft     float64 `json:"theirs_draft_rpm"`
	OursSelfMs      float64 `json:"ours_self_ms"`
	OursForeignMs   float64 `json:"ours_foreign_ms"`
	TheirsSelfMs    float64 `json:"theirs_self_ms"`
	TheirsForeignMs float64 `json:"theirs_foreign_ms"`
	OursMbps        float64 `json:"ours_mbps"`
	TheirsMbps      float64 `json:"theirs_mbps"`
	// TheirsStable is false when goresponsiveness said its throughput
	// never became stable (it then measures 15 s more and uses every
	// probe, not the last MAD intervals').
	TheirsStable bool `json:"theirs_stable"`
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
