package results

// NarrowPath is one transport's verdict at a narrow hop and its evidence.
type NarrowPath struct {
	MTU         int  `json:"mtu"`
	ICMPDropped bool `json:"icmp_dropped"`
	// Verdict is "survives", "collapses" (it got through at less than a
	// tenth of its LAN rate: RateRatio), "black hole" or "unmeasured"; How
	// says how it
	// survived ("pmtu discovery", "packets fit", "fragmentation",
	// "recovered without icmp") or "stall".
	Verdict string `json:"verdict"`
	How     string `json:"how"`
	// BulkCompleted and BulkStalled count the cell's bulk transfers
	// (iperf3, scp) that gave a result and those that gave none within
	// their bound; Stall is the first stalled one's error.
	BulkCompleted int    `json:"bulk_completed"`
	BulkStalled   int    `json:"bulk_stalled"`
	Stall         string `json:"stall,omitempty"`
	// Row is the hop's counts over this transport's own traffic: its
	// path's set-up, its warm-up and its completed bulk samples; Block
	// over the whole WAN block (shared with the
	// transports in Verification.SharedWith), which is where a stall's
	// drops show.
	Row NarrowCounts `json:"row"`
	// RateRatio is its iperf3 1-stream rate through the hop over its own on
	// the LAN; 0 when either is absent.
	RateRatio float64       `json:"rate_ratio,omitempty"`
	Block     *NarrowCounts `json:"block,omitempty"`
}

// NarrowCounts are the narrow hop's counts: frames dropped as too big,
// ICMP "fragmentation needed" sent, packets fragmented, and the longest IP
// packet passed whole (bytes; over the block, 0 when unknown).
type NarrowCounts struct {
	TooBig     uint64 `json:"too_big"`
	ICMPSent   uint64 `json:"icmp_sent"`
	Fragmented uint64 `json:"fragmented"`
	MaxPassed  uint64 `json:"max_passed_bytes,omitempty"`
}
