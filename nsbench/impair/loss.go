package impair

import (
	"math"
	"math/rand/v2"
)

// lossGen decides, packet by packet, whether a direction drops: an
// independent draw per packet with probability pct/100 from a PRNG seeded
// by (seed, direction). The n-th decision depends on the seed and the
// direction only, so two transports measured with the same seed see drops
// at the same packet positions.
type lossGen struct {
	threshold uint64 // drop when a uniform uint64 is below it; 0 never drops
	src       *rand.PCG
}

// newLossGen starts a direction's sequence. direction numbers the impaired
// directions (0 for the client's egress, 1 for the server's), so the two
// directions draw independent sequences from one seed.
func newLossGen(pct float64, seed, direction uint64) *lossGen {
	return &lossGen{
		threshold: lossThreshold(pct),
		// The stream constant keeps direction 0 away from PCG's (seed, 0).
		src: rand.NewPCG(seed, 0x9e3779b97f4a7c15^direction),
	}
}

// lossThreshold maps a percentage to the uint64 below which a uniform
// draw means "drop".
func lossThreshold(pct float64) uint64 {
	switch {
	case !(pct > 0):
		return 0
	case pct >= 100:
		return math.MaxUint64
	}
	return uint64(math.Ldexp(pct/100, 64))
}

// drop draws the next decision. Every packet draws, dropped or not.
func (l *lossGen) drop() bool {
	return l.src.Uint64() < l.threshold
}
