package results

// NarrowPath is one transport's verdict at a narrow hop and its evidence.
type NarrowPath struct {
	MTU         int  `json:"mtu"`
	ICMPDropped bool `json:"icmp_dropped"`
	// Verdict is "survives", "collapses" (it got through at less than a
	// tenth of the rate the path could carry: RateRatio), "black hole" (a
	// bulk transfer or its set-up failed while the hop dropped its packets:
	// Failed), "failed, not the hop" (failures during which the hop dropped
	// nothing), "not recorded" (failures without the hop's counts) or
	// "unmeasured"; How says how it survived ("pmtu discovery", "packets
	// fit", "fragmentation", "recovered without icmp"), "stall", or repeats
	// the verdict.
	Verdict string `json:"verdict"`
	How     string `json:"how"`
	NarrowBulk
	// Row is the hop's counts over this transport's own traffic: its
	// path's set-up, its warm-up and its completed bulk samples; Block
	// over the whole WAN block (shared with the
	// transports in Verification.SharedWith), which is where a stall's
	// drops show.
	Row NarrowCounts `json:"row"`
	// Failed is the hop's counts over its failed bulk samples (or its
	// failed set-up): the evidence of a black hole. Absent when none was
	// recorded, as in documents from before it was.
	Failed *NarrowCounts `json:"failed,omitempty"`
	NarrowRate
	Block *NarrowCounts `json:"block,omitempty"`
}

// NarrowBulk is how a cell's bulk transfers (iperf3, scp) fared at the
// hop: those that gave a result and those that gave none within their
// bound; Stall is the first stalled one's error.
type NarrowBulk struct {
	BulkCompleted int    `json:"bulk_completed"`
	BulkStalled   int    `json:"bulk_stalled"`
	Stall         string `json:"stall,omitempty"`
}

// NarrowRate is a transport's iperf3 1-stream rate through the hop over
// the rate the path could carry: its own on the LAN, or the condition's
// rate cap when that is lower (RateAgainst "cap"; "lan" otherwise, and
// absent in documents from before the cap was taken, which compared with
// the LAN); RateRatio is 0 when either is absent.
type NarrowRate struct {
	RateRatio   float64 `json:"rate_ratio,omitempty"`
	RateAgainst string  `json:"rate_against,omitempty"`
}

// NarrowCounts are the narrow hop's counts: frames dropped as too big,
// ICMP "fragmentation needed" sent (or suppressed), packets fragmented, and the longest IP
// packet passed whole (bytes; over the block, 0 when unknown).
type NarrowCounts struct {
	TooBig     uint64 `json:"too_big"`
	ICMPSent   uint64 `json:"icmp_sent"`
	Fragmented uint64 `json:"fragmented"`
	// ICMPSuppressed counts the too-big drops left unanswered by icmp=drop.
	ICMPSuppressed uint64 `json:"icmp_suppressed,omitempty"`
	MaxPassed      uint64 `json:"max_passed_bytes,omitempty"`
}
