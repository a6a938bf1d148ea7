package nsbench

import (
	"math"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// secondStageMin is the least --runs auto adds after a pilot.
const secondStageMin = stats.SecondStageMin

// cellTimes is the time each cell's samples took so far.
type cellTimes struct {
	payload  map[string]int64 // condition → the bytes a payload-sized instrument copies
	sized    map[string]bool  // instruments whose time scales with the payload
	copyRate map[string]float64
	spent    map[cellKey]time.Duration
	count    map[cellKey]int
}

// sampleTime estimates one sample of k, and says whether it is k's own
// measured mean. A cell not measured yet is costed as its nearest measured
// relatives: a copy as the copies under its condition (loss and delay set
// a WAN copy's pace more than the transport does), else as the
// transport's copies under another condition sized by the payload but no
// faster than the condition's profile lets one TCP connection copy
// (copyRateGuess); a fixed-duration tool as the same transport and tool
// under another condition, then as the tool through other transports.
func (p *cellTimes) sampleTime(k cellKey) (time.Duration, bool) {
	if c := p.count[k]; c > 0 {
		return p.spent[k] / time.Duration(c), true
	}
	near := []func(cellKey) bool{
		func(o cellKey) bool { return o.transport == k.transport && o.inst == k.inst },
		func(o cellKey) bool { return o.cond == k.cond && o.inst == k.inst },
		func(o cellKey) bool { return o.inst == k.inst },
		func(cellKey) bool { return true },
	}
	if p.sized[k.inst] {
		near[0], near[1] = near[1], near[0]
	}
	for i, like := range near {
		if d, ok := p.meanLike(k, like); ok {
			if p.sized[k.inst] && i > 0 {
				d = max(d, p.profileCopy(k.cond))
			}
			return d, false
		}
	}
	// No copy measured yet: a copy costs what an average sample did.
	var all time.Duration
	var n int
	for o, c := range p.count {
		all, n = all+p.spent[o], n+c
	}
	if n == 0 {
		return 0, false
	}
	return max(all/time.Duration(n), p.profileCopy(k.cond)), false
}

// profileCopy is how long a copy of cond's payload takes at the rate its
// profile lets one TCP connection reach, or 0 when it sets none.
func (p *cellTimes) profileCopy(cond string) time.Duration {
	rate := p.copyRate[cond]
	if rate <= 0 || p.payload[cond] <= 0 {
		return 0
	}
	return time.Duration(float64(p.payload[cond]) / rate * float64(time.Second))
}

// meanLike is the mean sample time of the measured cells near k, sized by
// k's payload when k's instrument and theirs copy one.
func (p *cellTimes) meanLike(k cellKey, near func(cellKey) bool) (time.Duration, bool) {
	var secs, bytes float64
	var n int
	sized := p.sized[k.inst] && p.payload[k.cond] > 0
	for o, c := range p.count {
		if c == 0 || !near(o) {
			continue
		}
		if sized && p.sized[o.inst] && p.payload[o.cond] > 0 {
			secs += p.spent[o].Seconds()
			bytes += float64(c) * float64(p.payload[o.cond])
			continue
		}
		if sized {
			continue // a fixed-duration tool says nothing of a copy's time
		}
		secs += p.spent[o].Seconds()
		n += c
	}
	switch {
	case sized && bytes > 0:
		return time.Duration(secs / bytes * float64(p.payload[k.cond]) * float64(time.Second)), true
	case !sized && n > 0:
		return time.Duration(secs / float64(n) * float64(time.Second)), true
	}
	return 0, false
}

// copyRateGuess is the rate (bytes/s) one TCP connection can copy at
// through an impaired condition, a first guess before any copy ran under
// it: the Mathis et al. bound MSS/RTT · √(3/2)/√loss for a lossy path,
// capped by the profile's rate; 0 when the profile sets neither (the LAN).
// On the reference's WAN (30 ms, 0.1 %) it gives 1.9 MB/s, and its 256 MiB
// copies took 1.8 MB/s through ssh and WireGuard, 3.6 MB/s through tw.
func copyRateGuess(p *results.Profile) float64 {
	if p == nil {
		return 0
	}
	const mss = 1448 // bytes: a 1500-byte MTU's TCP payload with timestamps
	var rate float64
	if p.LossPct > 0 && p.RTTMs > 0 {
		rate = mss / (p.RTTMs / 1000) * math.Sqrt(1.5) / math.Sqrt(p.LossPct/100)
	}
	if capped := float64(p.RateBps) / 8; capped > 0 && (rate == 0 || capped < rate) {
		rate = capped
	}
	return rate
}

// blockTimes is the time each block of the schedule spent outside its
// samples: before its first (set-up, warm-up, WAN probe), between them
// (meters, saving the results) and after its last (closing the paths, WAN
// verification).
type blockTimes struct {
	blocks  []progressBlock
	cur     int             // the block under way; -1 before the first
	started []bool          // per block: a sample has begun in it
	setUp   []time.Duration // per block: its time before its first sample
	closing []time.Duration // per block: its time after its last sample (known once the next began)
	closed  []bool
	gaps    time.Duration // between samples of one block, over the run
	gapN    int
	mark    time.Time // the end of the last sample, or the block's start
}

func newBlockTimes(blocks []progressBlock) blockTimes {
	n := len(blocks)
	return blockTimes{blocks: blocks, cur: -1, started: make([]bool, n), setUp: make([]time.Duration, n),
		closing: make([]time.Duration, n), closed: make([]bool, n)}
}

// enter starts block i at now: the time since the last sample closed the
// block before it (or, if none of its samples ran, set it up).
func (p *blockTimes) enter(i int, now time.Time) {
	if c := p.cur; c >= 0 {
		if p.started[c] {
			p.closing[c] += now.Sub(p.mark)
			p.closed[c] = true
		} else {
			p.setUp[c] += now.Sub(p.mark)
		}
	}
	p.cur, p.mark = i, now
}

// begin counts the time before a sample beginning at now: the block's
// set-up before its first, a gap between samples after.
func (p *blockTimes) begin(now time.Time) {
	c := p.cur
	if c < 0 {
		return
	}
	if !p.started[c] {
		p.setUp[c] += now.Sub(p.mark)
		p.started[c] = true
		return
	}
	p.gaps += now.Sub(p.mark)
	p.gapN++
}

// meanGap is the mean time between two samples of a block so far.
func (p *blockTimes) meanGap() time.Duration {
	if p.gapN == 0 {
		return 0
	}
	return p.gaps / time.Duration(p.gapN)
}

// ahead is the time the blocks will spend outside samples from now: the
// set-up of those not yet under way (less what the current one spent so
// far) and the closing of every block not yet closed. own is false when a
// set-up is costed from another condition's. A closing is costed from its
// condition's, else any block's, else 0, without making the estimate a
// guess: it is seconds against the minutes of samples, and the last
// block's is measured only after it.
func (p *blockTimes) ahead(now time.Time) (d time.Duration, own bool) {
	own = true
	for i := max(p.cur, 0); i < len(p.blocks); i++ {
		b := p.blocks[i]
		rows := time.Duration(len(b.transports))
		if i > p.cur || !p.started[i] {
			rate, measured := p.perTransport(p.setUp, p.started, b.cond)
			s := rows * rate
			if i == p.cur {
				s = max(0, s-now.Sub(p.mark))
			}
			d += s
			own = own && measured
		}
		closing, _ := p.perTransport(p.closing, p.closed, b.cond)
		d += rows * closing
	}
	return d, own
}

// perTransport is the mean of times (per block) per transport over the
// blocks whose time is known under cond, or, before any, over every block
// whose time is known (measured false).
func (p *blockTimes) perTransport(times []time.Duration, known []bool, cond string) (time.Duration, bool) {
	mean := func(match func(progressBlock) bool) (time.Duration, bool) {
		var sum time.Duration
		var rows int
		for i := range p.blocks {
			if !known[i] || !match(p.blocks[i]) {
				continue
			}
			sum += times[i]
			rows += len(p.blocks[i].transports)
		}
		if rows == 0 {
			return 0, false
		}
		return sum / time.Duration(rows), true
	}
	if d, ok := mean(func(b progressBlock) bool { return b.cond == cond }); ok {
		return d, true
	}
	d, _ := mean(func(progressBlock) bool { return true })
	return d, false
}
