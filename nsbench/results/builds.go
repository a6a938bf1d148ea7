package results

// Provenance is what twnsbench's own build information says: its module
// version, the VCS commit and whether the tree had changes, and Go.
type Provenance struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// Build is one build of a transport (a row NAME@LABEL): the programs it
// was run with, as --build named them.
type Build struct {
	Label    string         `json:"label"`
	Programs []BuildProgram `json:"programs"`
}

// BuildProgram is one program of a build: the transport's option that
// chose it, its path, the version it reports and its SHA-256, here where
// the run was started; across hosts, the copy each role's host ran.
type BuildProgram struct {
	Option  string `json:"option"`
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
	SHA256  string `json:"sha256"`
	// Hosts are the copies that ran on the roles' hosts (--host), one per
	// role that runs the program; absent on one host.
	Hosts []ProgramCopy `json:"hosts,omitempty"`
}

// ProgramCopy is a build's program as a role's host had it: where it was
// copied there and its SHA-256 and Go version as read there (the version
// absent for a program without Go build information). A role on the
// machine the run started from (ROLE=local) ran the program itself.
type ProgramCopy struct {
	Role    string `json:"role"`
	Host    string `json:"host"` // USER@HOST:PORT, or "local" (hosts.LocalName)
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
	SHA256  string `json:"sha256"`
}

// Verdicts are a run's comparison of two builds of a transport: how
// rounds were ordered, the thresholds, and each cell's verdict.
type Verdicts struct {
	// Order is how each round ordered the two builds: "ABBA" (A then B in
	// odd rounds, B then A in even ones), so that drift falls on both.
	Order string `json:"order"`
	// MinEffect is the run's --min-effect (relative, 0.05 for 5 %), or,
	// without it, the default of every cell whose metric declares none
	// (Metric.MinEffect); each cell records its own (Verdict.MinEffect).
	MinEffect float64 `json:"min_effect"`
	Alpha     float64 `json:"alpha"`
	MaxRounds int     `json:"max_rounds"`
	// FailOn are the --fail-on selectors: the cells whose verdict sets
	// the exit code (Verdict.Counts).
	FailOn []string  `json:"fail_on"`
	Cells  []Verdict `json:"cells"`
	// CPUProfile is where the roles' CPU went in each build (run --profile);
	// absent when the run did not profile.
	CPUProfile *CPUProfile `json:"cpu_profile,omitempty"`
}

// VerdictCell names one metric of one condition × instrument compared
// between two builds of a transport: rows A and B (NAME@LABEL).
type VerdictCell struct {
	Transport  string `json:"transport"` // the transport's row, without @LABEL
	A          string `json:"a"`
	B          string `json:"b"`
	Condition  string `json:"condition"`
	Instrument string `json:"instrument"`
	Metric     string `json:"metric"`
	Unit       string `json:"unit,omitempty"`
	Better     string `json:"better"`
}

// Estimate is the paired estimate of B/A with its interval, its p and q
// values (Benjamini–Hochberg) and the minimal detectable effect; each is
// absent when it could not be computed.
type Estimate struct {
	// Scale is how the pairs were compared: "" for B/A (Ratio, Lo, Hi;
	// MDE relative), "difference" or "count" for B − A in the unit
	// (Delta, DeltaLo, DeltaHi; MDE in the unit).
	Scale   string   `json:"scale,omitempty"`
	Ratio   *float64 `json:"ratio,omitempty"`
	Lo      *float64 `json:"lo,omitempty"`
	Hi      *float64 `json:"hi,omitempty"`
	Delta   *float64 `json:"delta,omitempty"`
	DeltaLo *float64 `json:"delta_lo,omitempty"`
	DeltaHi *float64 `json:"delta_hi,omitempty"`
	P       *float64 `json:"p,omitempty"`
	Q       *float64 `json:"q,omitempty"`
	MDE     *float64 `json:"mde,omitempty"`
}

// Medians are the medians of the A and B readings a verdict used (a
// reading at a bound counted at its bound), absent when it used none, and
// the 95 % interval of B's median (order statistics), absent when its
// readings are too few: what the CI files show beside the change.
type Medians struct {
	AMedian   *float64 `json:"a_median,omitempty"`
	BMedian   *float64 `json:"b_median,omitempty"`
	BMedianLo *float64 `json:"b_median_lo,omitempty"`
	BMedianHi *float64 `json:"b_median_hi,omitempty"`
}

// PairCounts are the pairs a verdict stood on.
type PairCounts struct {
	Pairs    int `json:"pairs"`
	Censored int `json:"censored,omitempty"` // pairs left out: a censored reading of unknown sign against the other
	// Bounded are the pairs used at a bound: a censored reading beyond
	// the other, so the sign is known and the change at least that.
	Bounded int `json:"bounded,omitempty"`
}

// HostAdjustment is how a ratio cell's pairs were adjusted for the host's
// other work (nsbench/verdict, adjust.go): NoiseSlope is γ, the slope of
// the per-round log ratio B/A on the log ratio of the CPU shares the host
// left each reading, and MDEUnadjusted the smallest detectable change the
// pairs had before; both absent when the cell was not adjusted.
type HostAdjustment struct {
	NoiseSlope    *float64 `json:"noise_slope,omitempty"`
	MDEUnadjusted *float64 `json:"mde_unadjusted,omitempty"`
}

// Verdict is one cell's verdict on build B against build A.
type Verdict struct {
	VerdictCell
	Estimate
	Medians
	HostAdjustment
	PairCounts
	// MinEffect is the min effect the cell was decided with (relative):
	// the run's --min-effect, else its metric's own, else the default.
	// Absent in documents from before it was recorded per cell
	// (Verdicts.MinEffect then holds for every cell).
	MinEffect float64 `json:"min_effect,omitempty"`
	Verdict   string  `json:"verdict"` // slower, faster, no change, undecided
	Reason    string  `json:"reason,omitempty"`
	// Counts marks a cell --fail-on selects: its verdict sets the exit
	// code.
	Counts bool `json:"counts,omitempty"`
}
