package nsbench

import (
	"fmt"
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
	p := newProgress(progressPlan{runs: 2, instruments: []string{"iperf3-1", "scp"}, blocks: lanOnly}, nil)
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
	p := newProgress(progressPlan{runs: 2, instruments: []string{"iperf3-1", "scp"}, sized: map[string]bool{"scp": true},
		payload: map[string]int64{"lan": 1 << 30, "wan": 256 << 20}, blocks: blocks}, nil)
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
	// A WAN whose profile caps one connection's copy at 1 MB/s: its
	// 256 MiB copies take at least 268 s each, whatever the LAN's rate.
	p.cells.copyRate = map[string]float64{"wan": 1e6}
	if got, _ := p.eta(); got != 110*time.Second-24*time.Second+4*268435456*time.Microsecond {
		t.Errorf("eta with the WAN's copy rate %v, want %v", got, 110*time.Second-24*time.Second+4*268435456*time.Microsecond)
	}
}

// TestCopyRateGuess: the Mathis bound for the reference's WAN, and a rate
// cap below it.
func TestCopyRateGuess(t *testing.T) {
	wan := &profileFor30ms
	if got := copyRateGuess(wan); got < 1.86e6 || got > 1.88e6 {
		t.Errorf("30 ms, 0.1 %%: %.0f B/s, want 1448/0.03·√1.5/√0.001 ≈ 1.87 MB/s", got)
	}
	capped := *wan
	capped.RateBps = 8e6
	if got := copyRateGuess(&capped); got != 1e6 {
		t.Errorf("capped at 8 Mbit/s: %.0f B/s, want 1e6", got)
	}
	if got := copyRateGuess(nil); got != 0 {
		t.Errorf("LAN: %v, want 0", got)
	}
}

// TestProgressRunOfUnderAuto: under --runs auto the plan shown is the
// pilot's until the pilot fixes the cell's runs, then those runs (never
// "run 7/6"); the cells whose pilot is not over are forecast and the
// estimate says it is a first guess.
func TestProgressRunOfUnderAuto(t *testing.T) {
	clock := time.Unix(0, 0)
	var statuses []Status
	var lines []string
	p := newProgress(progressPlan{runs: 6, maxRuns: 20, instruments: []string{"iperf3-1"}, blocks: lanOnly},
		func(s Status) { statuses = append(statuses, s) })
	p.now = func() time.Time { return clock }
	p.start, p.blocks.mark = clock, clock
	p.enter(0)
	logf := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
	sample := func(tr string, run int) {
		p.begin(tr, "lan", "iperf3-1", run)
		clock = clock.Add(10 * time.Second)
		p.finish(logf, tr, "lan", "iperf3-1", run, "ok")
	}
	for run := 1; run <= 6; run++ {
		sample("ssh", run)
		sample("tw", run)
	}
	if s := statuses[len(statuses)-1]; s.Run != (RunOf{Run: 6, Runs: 6, Pilot: true, MaxRuns: 20}) || s.Run.String() != "6/6 of the pilot, at most 20" {
		t.Errorf("last pilot run: %+v %q", s.Run, s.Run.String())
	}
	// Both pilots over, unfixed: at least two more runs each are coming.
	if eta, guess := p.eta(); eta != 4*10*time.Second || !guess {
		t.Errorf("before the plans: eta %v %v, want 40s (the least the rule adds) as a first guess", eta, guess)
	}
	p.fix("ssh", "lan", "iperf3-1", 11)
	// tw's pilot is forecast as ssh's fixed one: 5 more.
	if eta, guess := p.eta(); eta != 10*10*time.Second || !guess {
		t.Errorf("ssh fixed at 11: eta %v %v, want 100s as a first guess", eta, guess)
	}
	p.fix("tw", "lan", "iperf3-1", 8)
	if eta, guess := p.eta(); eta != 7*10*time.Second || guess || p.total() != 19 {
		t.Errorf("both fixed: eta %v %v total %d, want 70s measured and 19", eta, guess, p.total())
	}
	sample("ssh", 7)
	if s := statuses[len(statuses)-1]; s.Run.String() != "7/11" {
		t.Errorf("run 7 of a cell planned to 11: %q", s.Run.String())
	}
	if l := lines[len(lines)-1]; !strings.Contains(l, " run 7/11: ok") {
		t.Errorf("log line %q: want run 7/11", l)
	}
}

// TestProgressNotApplicableLeavesThePlan: an instrument a path cannot
// carry leaves the plan under every condition as soon as the path is up;
// before, its cells stayed unmeasured in the plan until the last run of
// each block reached them, and the estimate stayed a first guess.
func TestProgressNotApplicableLeavesThePlan(t *testing.T) {
	clock := time.Unix(0, 0)
	blocks := []progressBlock{{cond: "lan", transports: []string{"ssh", "wireguard"}}, {cond: "wan", transports: []string{"ssh", "wireguard"}}}
	p := newProgress(progressPlan{runs: 3, instruments: []string{"iperf3-1", "ping"}, blocks: blocks}, nil)
	p.now = func() time.Time { return clock }
	p.start, p.blocks.mark = clock, clock
	p.enter(0)
	p.notApplicable("ssh", "ping")
	if p.total() != 18 {
		t.Errorf("total %d, want 18 (ssh's ping out under both conditions)", p.total())
	}
	for _, c := range []struct{ tr, inst string }{{"ssh", "iperf3-1"}, {"wireguard", "iperf3-1"}, {"wireguard", "ping"}} {
		p.begin(c.tr, "lan", c.inst, 1)
		clock = clock.Add(10 * time.Second)
		p.finish(func(string, ...any) {}, c.tr, "lan", c.inst, 1, "ok")
	}
	p.enter(1)
	for _, c := range []struct{ tr, inst string }{{"ssh", "iperf3-1"}, {"wireguard", "iperf3-1"}, {"wireguard", "ping"}} {
		p.begin(c.tr, "wan", c.inst, 1)
		clock = clock.Add(10 * time.Second)
		p.finish(func(string, ...any) {}, c.tr, "wan", c.inst, 1, "ok")
	}
	if _, guess := p.eta(); guess {
		t.Errorf("after every condition's first round the estimate is still a first guess")
	}
}

// TestProgressForecastAndTail: under --runs auto, a cell that will not run
// (its path did not come up) is no pilot that added nothing: the forecast
// of the pilots not yet over rests on the fixed ones only. And the end's
// drift probe is still ahead after the last sample.
func TestProgressForecastAndTail(t *testing.T) {
	clock := time.Unix(0, 0)
	blocks := []progressBlock{{cond: "lan", transports: []string{"ssh", "tw", "wireguard"}}}
	p := newProgress(progressPlan{runs: 6, maxRuns: 20, instruments: []string{"iperf3-1"}, blocks: blocks, tail: 3 * time.Second}, nil)
	p.now = func() time.Time { return clock }
	p.start, p.blocks.mark = clock, clock
	p.enter(0)
	p.cancel("wireguard", "lan", "iperf3-1")
	for run := 1; run <= 6; run++ {
		for _, tr := range []string{"ssh", "tw"} {
			p.begin(tr, "lan", "iperf3-1", run)
			clock = clock.Add(10 * time.Second)
			p.finish(func(string, ...any) {}, tr, "lan", "iperf3-1", run, "ok")
		}
	}
	p.fix("ssh", "lan", "iperf3-1", 12)
	// tw's pilot is forecast to add what ssh's did (6), not the mean of
	// ssh's 6 and the cancelled cell's 0.
	if eta, guess := p.eta(); eta != 12*10*time.Second+3*time.Second || !guess {
		t.Errorf("eta %v %v, want 2m3s (12 samples and the drift probe) as a first guess", eta, guess)
	}
}

// TestProgressPairedPlansTheFirstLook: two builds' block plans the rounds
// before the verdict's first look (12 with --runs 3), not --runs, and its
// estimate is a guess until the verdict has stopped asking for more. A
// counted block looks first at 12 whatever --runs asks of the others.
func TestProgressPairedPlansTheFirstLook(t *testing.T) {
	o := Defaults()
	o.Runs, o.Builds.MaxRounds = 3, 20
	if got := pairedRounds(o, false); got != 12 {
		t.Errorf("paired rounds with --runs 3, cap 20: %d, want 12", got)
	}
	o.Runs, o.Builds.MaxRounds = 60, 100
	if got, counted := pairedRounds(o, false), pairedRounds(o, true); got != 60 || counted != 12 {
		t.Errorf("paired rounds with --runs 60, cap 100: %d, counted %d; want 60, counted 12", got, counted)
	}
	o.Runs, o.Builds.MaxRounds = 3, 8
	if got, counted := pairedRounds(o, false), pairedRounds(o, true); got != 8 || counted != 8 {
		t.Errorf("paired rounds with cap 8: %d, counted %d; want 8 each", got, counted)
	}
	clock := time.Unix(0, 0)
	blocks := []progressBlock{{cond: "lan", transports: []string{"tw@a", "tw@b"}, pairedRuns: 12}}
	p := newProgress(progressPlan{runs: 3, instruments: []string{"iperf3-1"}, blocks: blocks}, nil)
	p.now = func() time.Time { return clock }
	p.start, p.blocks.mark = clock, clock
	if p.total() != 12*2 {
		t.Errorf("planned %d samples, want 12 rounds × 2 builds", p.total())
	}
	p.enter(0)
	for _, tr := range []string{"tw@a", "tw@b"} {
		p.begin(tr, "lan", "iperf3-1", 1)
		clock = clock.Add(10 * time.Second)
		p.finish(func(string, ...any) {}, tr, "lan", "iperf3-1", 1, "ok")
	}
	if got, guess := p.eta(); !guess || got != 22*10*time.Second {
		t.Errorf("estimate with the verdict still open: %v, guess %v; want 3m40s (22 samples of 10 s), a guess", got, guess)
	}
	p.settle("tw@a", "lan", "iperf3-1")
	p.settle("tw@b", "lan", "iperf3-1")
	if got, guess := p.eta(); guess || got != 22*10*time.Second {
		t.Errorf("estimate after the verdict settled: %v, guess %v; want 3m40s, measured", got, guess)
	}
}
