package nsbench

import (
	"fmt"
	"testing"
	"time"
)

// TestProgressCountsOnlyWhatRuns: dropped samples leave the plan, so [k/N]
// ends at N, and the estimate is per instrument from measured times.
func TestProgressCountsOnlyWhatRuns(t *testing.T) {
	clock := time.Unix(0, 0)
	var lines []string
	logf := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
	// 2 transports × 1 condition × 2 runs of two instruments: 8 planned.
	p := newProgress(2, 2, 1, []string{"iperf3-1", "scp"}, nil)
	p.now = func() time.Time { return clock }
	if p.total() != 8 {
		t.Fatalf("total %d, want 8", p.total())
	}
	sample := func(inst string, d time.Duration) {
		p.begin("ssh", "lan", inst, 1)
		clock = clock.Add(d)
		p.finish(logf, "ssh", "lan", inst, 1, "ok")
	}
	sample("iperf3-1", 10*time.Second)
	// Before scp was measured, its samples are costed at the mean so far.
	if got := p.eta(); got != 7*10*time.Second {
		t.Errorf("eta %v, want 70s (3 iperf3 and 4 scp samples left at 10 s)", got)
	}
	sample("scp", 30*time.Second)
	sample("iperf3-1", 10*time.Second)
	sample("scp", 30*time.Second)
	// The second transport is skipped: its four samples leave the plan.
	p.drop("iperf3-1", 2)
	p.drop("scp", 2)
	if p.total() != 4 || p.eta() != 0 {
		t.Errorf("after the skip: total %d, eta %v; want 4 and 0", p.total(), p.eta())
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

func TestProgressETAPerInstrument(t *testing.T) {
	clock := time.Unix(0, 0)
	p := newProgress(3, 1, 1, []string{"iperf3-1", "scp"}, nil)
	p.now = func() time.Time { return clock }
	for _, s := range []struct {
		inst string
		d    time.Duration
	}{{"iperf3-1", 2 * time.Second}, {"scp", 60 * time.Second}} {
		p.begin("ssh", "lan", s.inst, 1)
		clock = clock.Add(s.d)
		p.finish(func(string, ...any) {}, "ssh", "lan", s.inst, 1, "ok")
	}
	// 2 iperf3 at 2 s + 2 scp at 60 s.
	if got, want := p.eta(), 124*time.Second; got != want {
		t.Errorf("eta %v, want %v", got, want)
	}
}
