package impair

// The verdict of a transport at a narrow hop: did its bulk transfers get
// through, and how. JudgeNarrow is pure; the report words it.

// NarrowEvidence is what one transport's cell showed at a narrow hop.
type NarrowEvidence struct {
	Hop NarrowHop
	// Completed and Stalled count the cell's bulk transfers (iperf3, scp)
	// that gave a result, and those that gave none within their bound (or
	// its path's set-up, when that failed).
	Completed, Stalled int
	// Failed are the hop's counts over the stalled transfers whose counts
	// were recorded, FailedRecorded of them: a failure is the hop's only
	// when the hop dropped its packets meanwhile.
	Failed         NarrowCounts
	FailedRecorded int
	// Counts are the narrow hop's counts over the transport's own traffic
	// that got through: its set-up, warm-up and completed transfers (the
	// frames too big, the ICMP sent, the packets fragmented).
	Counts NarrowCounts
	// RateRatio is the transport's bulk rate through the hop over the rate
	// the path could carry (RateReference); 0 when either is absent.
	// AgainstCap: that rate is the condition's cap, not the LAN's.
	RateRatio  float64
	AgainstCap bool
}

// RateReference is what a transport's rate through the hop is compared
// with: its own on the plain LAN, or the condition's rate cap when that is
// lower (a transfer held to 20 Mbit/s by the cap has not collapsed). All
// in one unit; 0 for absent. ok is false when there is nothing to compare.
func RateReference(lan, limit float64) (ref float64, againstCap, ok bool) {
	switch {
	case limit > 0 && (lan <= 0 || limit < lan):
		return limit, true, true
	case lan > 0:
		return lan, false, true
	}
	return 0, false, false
}

// CollapseRatio is the rate, relative to the transport's own on the LAN
// (or the condition's cap, when lower), below which transfers that got through count as collapsed: wireguard-go
// at MTU 1280 completed its iperf3 at 1.6 Mbit/s, its UDP GSO batches
// refused by the kernel (sendmmsg EMSGSIZE) and only single datagrams,
// fragmented, passing — "survives" alone would hide that.
const CollapseRatio = 0.1

// How a transport fared: NarrowVerdict.How.
const (
	NarrowUnmeasured    = "unmeasured"             // no bulk transfer ran
	NarrowStall         = "stall"                  // a bulk transfer stalled while the hop dropped its packets: a black hole
	NarrowNotHop        = "failed, not the hop"    // bulk transfers failed while the hop dropped none of their packets
	NarrowNotRecorded   = "not recorded"           // bulk transfers failed; the hop's counts over them were not recorded
	NarrowFits          = "packets fit"            // nothing was too big: its own MTU or MSS clamping
	NarrowPMTUD         = "pmtu discovery"         // too big, told by ICMP, and it went on smaller
	NarrowFragmentation = "fragmentation"          // it sent without DF and the hop fragmented
	NarrowNoICMP        = "recovered without icmp" // too big, no ICMP, and it went on (packetization-layer probing)
)

// NarrowVerdict is one transport's verdict at a narrow hop.
type NarrowVerdict struct {
	Survives bool
	How      string // one of the Narrow… constants
	// Collapsed: it survives, but at less than CollapseRatio of its LAN
	// rate (or the cap's).
	Collapsed bool
}

// BlackHole reports whether the verdict is a black hole.
func (v NarrowVerdict) BlackHole() bool { return v.How == NarrowStall }

// JudgeNarrow judges e: a black hole when any bulk transfer stalled while
// the hop dropped its packets as too big (one is enough: a path that
// stalls sometimes stalls); a failure during which the hop dropped nothing
// is not the hop's ("failed, not the hop"), and one whose counts were not
// recorded is judged no further; otherwise the way its packets got
// through, read from the hop's counts over its completed transfers.
func JudgeNarrow(e NarrowEvidence) NarrowVerdict {
	v := judgeHow(e)
	v.Collapsed = v.Survives && e.RateRatio > 0 && e.RateRatio < CollapseRatio
	return v
}

// judgeHow is JudgeNarrow's verdict before the rate is looked at.
func judgeHow(e NarrowEvidence) NarrowVerdict {
	c := e.Counts
	switch {
	case e.Completed+e.Stalled == 0:
		return NarrowVerdict{How: NarrowUnmeasured}
	case e.Stalled > 0 && e.Failed.TooBig > 0:
		return NarrowVerdict{How: NarrowStall}
	case e.Stalled > 0 && e.FailedRecorded < e.Stalled:
		return NarrowVerdict{How: NarrowNotRecorded}
	case e.Stalled > 0:
		return NarrowVerdict{How: NarrowNotHop}
	case c.Fragmented > 0:
		return NarrowVerdict{Survives: true, How: NarrowFragmentation}
	case c.TooBig == 0:
		return NarrowVerdict{Survives: true, How: NarrowFits}
	case c.ICMPSent > 0:
		return NarrowVerdict{Survives: true, How: NarrowPMTUD}
	default:
		return NarrowVerdict{Survives: true, How: NarrowNoICMP}
	}
}
