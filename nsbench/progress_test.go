package nsbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var lanOnly = []progressBlock{{cond: "lan", transports: []string{"ssh", "tw"}}}

// TestProgressCountsOnlyWhatRuns: dropped samples leave the plan, so [k/N]
// ends at N, and the estimate is per cell from measured times.
func TestProgressCountsOnlyWhatRuns(t *testing.T) {
	clock := time.Unix(0, 0)
	var lines []string
	logf := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
	// 2 transports × 1 condition × 2 runs of two instruments: 8 planned.
	p := newProgress(2, []string{"iperf3-1", "scp"}, nil, nil, lanOnly, nil)
	p.now = func() time.Time { return clock }
	p.start, p.blocks.mark = clock, clock
	p.enter(0)
	if p.total() != 8 {
		t.Fatalf("total %d, want 8", p.total())
	}
	sample := func(tr, inst string, d time.Duration) {
		p.begin(tr, "lan", inst, 1)
		clock = clock.Add(d)
		p.finish(logf, tr, "lan", inst, 1, "ok")
	}
	sample("ssh", "iperf3-1", 10*time.Second)
	// Before scp was measured, its samples are costed at the mean so far.
	if got, guess := p.eta(); got != 7*10*time.Second || !guess {
		t.Errorf("eta %v %v, want 70s as a first guess (3 iperf3 and 4 scp samples left at 10 s)", got, guess)
	}
	if !strings.HasSuffix(lines[0], "about 1m10s left, a first guess)") {
		t.Errorf("line %q: want the first guess named", lines[0])
	}
	sample("ssh", "scp", 30*time.Second)
	sample("ssh", "iperf3-1", 10*time.Second)
	sample("ssh", "scp", 30*time.Second)
	// The second transport is skipped: its four samples leave the plan.
	p.drop("tw", "lan", "iperf3-1", 2)
	p.drop("tw", "lan", "scp", 2)
	if got, _ := p.eta(); p.total() != 4 || got != 0 {
		t.Errorf("after the skip: total %d, eta %v; want 4 and 0", p.total(), got)
	}
	if last := lines[len(lines)-1]; last[:5] != "[4/8]" {
		t.Errorf("last line %q", last)
	}
	p.begin("x", "lan", "iperf3-1", 1)
	p.finish(logf, "x", "lan", "iperf3-1", 1, "ok") // an unplanned extra never makes N smaller than k
	if p.done > p.total() {
		t.Errorf("done %d > total %d", p.done, p.total())
	}
}

// TestProgressETAPerCell: each transport's own time counts, and a copy not
// measured yet under a condition is sized by that condition's payload.
func TestProgressETAPerCell(t *testing.T) {
	clock := time.Unix(0, 0)
	blocks := []progressBlock{{cond: "lan", transports: []string{"ssh", "tw"}}, {cond: "wan", transports: []string{"ssh", "tw"}}}
	p := newProgress(2, []string{"iperf3-1", "scp"}, map[string]bool{"scp": true},
		map[string]int64{"lan": 1 << 30, "wan": 256 << 20}, blocks, nil)
	p.now = func() time.Time { return clock }
	p.start, p.blocks.mark = clock, clock
	p.enter(0)
	clock = clock.Add(20 * time.Second) // two paths set up: 10 s each
	for _, s := range []struct {
		tr, inst string
		d        time.Duration
	}{{"ssh", "iperf3-1", 2 * time.Second}, {"ssh", "scp", 8 * time.Second}, {"tw", "iperf3-1", 4 * time.Second}, {"tw", "scp", 40 * time.Second}} {
		p.begin(s.tr, "lan", s.inst, 1)
		clock = clock.Add(s.d)
		p.finish(func(string, ...any) {}, s.tr, "lan", s.inst, 1, "ok")
	}
	// LAN run 2: 2+8+4+40 = 54 s. WAN, guessed: the set-up at LAN's
	// 10 s per path, 20 s; each transport's iperf3 as on the LAN (2×2 s
	// + 2×4 s), its scp at its LAN rate for a quarter of the bytes
	// (2×2 s + 2×10 s): 36 s. 110 s in all.
	if got, guess := p.eta(); got != 110*time.Second || !guess {
		t.Errorf("eta %v %v, want 1m50s as a first guess", got, guess)
	}
}

// simCell is one transport × instrument of the simulated run: its sample
// time on the LAN and under the WAN (scp copies 5 GiB on the LAN, 256 MiB
// under the WAN, at a WAN rate slower than the LAN's).
type simCell struct {
	transport, inst string
	lan, wan        time.Duration
}

// TestETAWithinFifteenPercent replays a simulated default run — four
// transports, LAN then WAN, the reference's four instruments, 3 runs, paths
// set up together per condition with their warm-ups, ±10 % noise on every
// time — and checks the ETA against the time the run really had left:
// before the first round of every condition has run it says it is a first
// guess; from then on it is within 15 % of the truth (or 15 s, at the
// very end).
func TestETAWithinFifteenPercent(t *testing.T) {
	const runs = 3
	cells := []simCell{
		{"ssh", "iperf3-1", 10500 * time.Millisecond, 10800 * time.Millisecond},
		{"ssh", "iperf3-4", 10600 * time.Millisecond, 10900 * time.Millisecond},
		{"ssh", "tcp_rr", 10200 * time.Millisecond, 10300 * time.Millisecond},
		{"ssh", "scp", 14 * time.Second, 6 * time.Second},
		{"wireguard", "iperf3-1", 10700 * time.Millisecond, 11 * time.Second},
		{"wireguard", "iperf3-4", 10800 * time.Millisecond, 11 * time.Second},
		{"wireguard", "tcp_rr", 10300 * time.Millisecond, 10400 * time.Millisecond},
		{"wireguard", "scp", 24 * time.Second, 9 * time.Second},
		{"tw", "iperf3-1", 12 * time.Second, 13 * time.Second},
		{"tw", "iperf3-4", 12500 * time.Millisecond, 14 * time.Second},
		{"tw", "tcp_rr", 11 * time.Second, 11500 * time.Millisecond},
		{"tw", "scp", 95 * time.Second, 40 * time.Second},
		{"ssh-tun", "iperf3-1", 11 * time.Second, 12 * time.Second},
		{"ssh-tun", "iperf3-4", 11500 * time.Millisecond, 12 * time.Second},
		{"ssh-tun", "tcp_rr", 10500 * time.Millisecond, 11 * time.Second},
		{"ssh-tun", "scp", 60 * time.Second, 25 * time.Second},
	}
	transports := []string{"ssh", "wireguard", "tw", "ssh-tun"}
	instruments := []string{"iperf3-1", "iperf3-4", "tcp_rr", "scp"}
	// Set-up and warm-up per block: each path's, the LAN's with a 256 MiB
	// scp warm-up, the WAN's with the RTT probe and no scp warm-up.
	setUp := map[string]time.Duration{"lan": 4 * 25 * time.Second, "wan": 4*12*time.Second + 10*time.Second}
	blocks := []progressBlock{{cond: "lan", transports: transports}, {cond: "wan", transports: transports}}

	rng := rand.New(rand.NewPCG(8, 24))
	noisy := func(d time.Duration) time.Duration { return time.Duration(float64(d) * (0.9 + 0.2*rng.Float64())) }
	// The schedule as it will happen: (time offset, event).
	type event struct {
		block     int
		transport string
		inst      string
		run       int
		d         time.Duration // the sample's (or the set-up's) time
	}
	var events []event
	for i, b := range blocks {
		events = append(events, event{block: i, run: 0, d: noisy(setUp[b.cond])})
		for run := 1; run <= runs; run++ {
			for _, c := range cells {
				d := c.lan
				if b.cond == "wan" {
					d = c.wan
				}
				events = append(events, event{block: i, transport: c.transport, inst: c.inst, run: run, d: noisy(d)})
			}
		}
	}
	const tail = 3 * time.Second // the last block's closing and verification
	var total time.Duration
	for _, e := range events {
		total += e.d
	}
	total += tail

	clock := time.Unix(0, 0)
	p := newProgress(runs, instruments, map[string]bool{"scp": true},
		map[string]int64{"lan": 5 << 30, "wan": 256 << 20}, blocks, nil)
	p.now = func() time.Time { return clock }
	p.start, p.blocks.mark = clock, clock
	var elapsed time.Duration
	firstRound := map[string]bool{}
	worstGuess, worstLANGuess := 0.0, 0.0
	for i, e := range events {
		if e.run == 0 {
			p.enter(e.block)
			clock, elapsed = clock.Add(e.d), elapsed+e.d
			continue
		}
		p.begin(e.transport, blocks[e.block].cond, e.inst, e.run)
		clock, elapsed = clock.Add(e.d), elapsed+e.d
		p.finish(func(string, ...any) {}, e.transport, blocks[e.block].cond, e.inst, e.run, "ok")
		if e.run == 1 && (i+1 == len(events) || events[i+1].run != 1) {
			firstRound[blocks[e.block].cond] = true
		}
		eta, guess := p.eta()
		truth := total - elapsed
		off := math.Abs(eta.Seconds() - truth.Seconds())
		if len(firstRound) < len(blocks) {
			if !guess {
				t.Fatalf("%s / %s run %d: the ETA claims to be measured before every condition's first round", e.transport, blocks[e.block].cond, e.run)
			}
			worstGuess = max(worstGuess, off/truth.Seconds())
			if firstRound["lan"] {
				worstLANGuess = max(worstLANGuess, off/truth.Seconds())
			}
			continue
		}
		if guess {
			t.Errorf("%s / %s run %d: still a first guess after every condition's first round", e.transport, blocks[e.block].cond, e.run)
		}
		if off > max(0.15*truth.Seconds(), 15) {
			t.Errorf("%s / %s run %d, %s in: ETA %s, truth %s: off by %.0f %%",
				e.transport, blocks[e.block].cond, e.run, elapsed.Round(time.Second), eta.Round(time.Second), truth.Round(time.Second), 100*off/truth.Seconds())
		}
	}
	t.Logf("run of %s; the first guess was off by up to %.0f %% (after the LAN's first round: %.0f %%)", total.Round(time.Second), 100*worstGuess, 100*worstLANGuess)
}
