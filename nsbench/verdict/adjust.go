package verdict

import (
	"math"

	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// On a shared host another tenant's work takes CPU from one build's
// reading and not the other's, and a rate the tunnel's CPU bounds falls
// with the share it was left: in an A/A run of wireguard-go beside other
// work (background 50–90 %), iperf3-1's per-round log ratios spread
// 48.7 %, and 15.1 % once each was taken against the log ratio of the
// two readings' free CPU shares (docs/builds.md). So a ratio cell whose
// every pair knows both free shares is decided on
//
//	dᵢ − γ·ln(BFreeᵢ/AFreeᵢ)
//
// where dᵢ = ln(Bᵢ/Aᵢ) and γ is the Theil–Sen slope of d on that log
// ratio: B against A as if both had been left the same share. A metric
// the host's work does not move gets γ near 0 and keeps its d. The same
// γ serves every test of the rule (all pairs, the batches of the
// confirmation), and the MDE the pairs had before is kept beside the one
// after.

// HostAdjustment is how a cell's pairs were adjusted for the host's other
// work: Slope is γ, UnadjustedMDE the MDE of the pairs before; both NaN
// when the cell was not adjusted.
type HostAdjustment struct {
	Slope         float64
	UnadjustedMDE float64
}

// Adjusted reports whether the cell's pairs were adjusted.
func (h HostAdjustment) Adjusted() bool { return !math.IsNaN(h.Slope) }

// adjustForHost returns u's changes adjusted for the host's other work,
// and γ; ok is false, and d unusable, when the cell is not adjusted: not a
// ratio cell (a difference or a count has no share to scale), a pair at a
// bound (its change is a bound, and moving it could turn its known
// sign), a pair without its free shares, fewer than FirstLook pairs, free
// shares that never differ between A and B, or an adjustment that would
// not narrow the changes' spread.
func adjustForHost(u pairsUsed, s Scale) (d []float64, slope float64, ok bool) {
	if s != ScaleRatio || u.bounded > 0 || u.freeUnknown || len(u.d) < FirstLook || len(u.free) != len(u.d) {
		return nil, math.NaN(), false
	}
	slope = stats.TheilSen(u.free, u.d)
	if math.IsNaN(slope) {
		return nil, slope, false
	}
	d = make([]float64, len(u.d))
	for i := range u.d {
		d[i] = u.d[i] - slope*u.free[i]
	}
	// Where the host's work barely varied (a quiet host: shares within a
	// few % of each other), γ is read off noise and the adjustment can
	// widen what it should narrow: it is kept only when it narrows.
	if spread(d) >= spread(u.d) {
		return nil, math.NaN(), false
	}
	return d, slope, true
}

// spread is the standard deviation of d.
func spread(d []float64) float64 {
	var sum, ss float64
	for _, x := range d {
		sum += x
	}
	mean := sum / float64(len(d))
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(len(d)-1))
}
