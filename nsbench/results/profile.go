package results

// CPUProfile is a run's sampled CPU stacks of the roles, B against A, per
// build pair and condition (run --profile).
type CPUProfile struct {
	// Method is how the stacks were sampled: the sampler's command line
	// without the run's own names.
	Method      string        `json:"method"`
	Comparisons []ProfileDiff `json:"comparisons"`
}

// ProfileDiff is one build pair's profiles under one condition.
type ProfileDiff struct {
	Transport string `json:"transport"` // the transport's row, without @LABEL
	Condition string `json:"condition"`
	// Rounds are the rounds in which both builds have stacks: the pairs
	// the intervals are taken over.
	Rounds int         `json:"rounds"`
	A      ProfileSide `json:"a"`
	B      ProfileSide `json:"b"`
	// Functions are those whose share of the samples changed most (by
	// self share), largest change first.
	Functions []FunctionChange `json:"functions"`
	// Flame is the merged call tree of both builds' stacks, its root the
	// whole; frames below the smallest drawn share of B are left out.
	Flame *FlameNode `json:"flame,omitempty"`
}

// ProfileSide is one build's profile: its row, its samples over the
// rounds compared, and the folded stacks' file in the output directory.
type ProfileSide struct {
	Row     string `json:"row"`
	Samples int64  `json:"samples"`
	Folded  string `json:"folded"`
}

// FunctionChange is one function's share of the samples in each build,
// self (the function on top of the stack) and inclusive (anywhere in it),
// in percent, pooled over the rounds, and the change B − A of each share in
// percentage points with its interval across rounds.
type FunctionChange struct {
	Name  string      `json:"name"`
	SelfA float64     `json:"self_a"`
	SelfB float64     `json:"self_b"`
	Self  ShareChange `json:"self_change"`
	InclA float64     `json:"incl_a"`
	InclB float64     `json:"incl_b"`
	Incl  ShareChange `json:"incl_change"`
}

// ShareChange is the change of a share B − A in percentage points: the
// Hodges–Lehmann estimate over the rounds' differences with its
// signed-rank 95 % interval; the interval is absent below 6 rounds.
type ShareChange struct {
	Delta *float64 `json:"delta,omitempty"`
	Lo    *float64 `json:"lo,omitempty"`
	Hi    *float64 `json:"hi,omitempty"`
}

// FlameNode is one frame of the merged call tree: the samples of each
// build whose stack passes through it (inclusive).
type FlameNode struct {
	Name     string       `json:"name"`
	A        int64        `json:"a"`
	B        int64        `json:"b"`
	Children []*FlameNode `json:"children,omitempty"`
}
