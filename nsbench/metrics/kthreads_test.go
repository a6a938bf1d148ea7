package metrics

import (
	"testing"
	"time"
)

func TestParseKthreadStat(t *testing.T) {
	for _, c := range []struct {
		line    string
		ticks   uint64
		kthread bool
	}{
		// A kworker (flags 0x04208060: PF_KTHREAD set), utime 3, stime 1234.
		{"17 (kworker/0:1-events) I 2 0 0 0 -1 69238880 0 0 0 0 3 1234 0 0 20 0 1 0 5 0 0", 1237, true},
		// A user process whose name has spaces and a ')' (flags 0x400100).
		{"4242 (my (odd) prog) S 1 4242 4242 0 -1 4194560 100 0 0 0 50 25 0 0 20 0 1 0 9 0 0", 0, false},
		{"garbage", 0, false},
	} {
		ticks, kthread := parseKthreadStat([]byte(c.line))
		if ticks != c.ticks || kthread != c.kthread {
			t.Errorf("%q: got %d %v, want %d %v", c.line, ticks, kthread, c.ticks, c.kthread)
		}
	}
}

func TestNoiseShares(t *testing.T) {
	n := Noise{BackgroundCPUSec: 1, StealSec: 0.2, WindowSec: 2, Cores: 2}
	if got := n.BackgroundPct(); got != 25 {
		t.Errorf("background %% = %v, want 25", got)
	}
	if got := n.StealPct(); got != 5 {
		t.Errorf("steal %% = %v, want 5", got)
	}
	if (Noise{}).BackgroundPct() != 0 {
		t.Error("an empty window must give 0, not NaN")
	}
}

// A busy loop in this process, outside any run cgroup and not the
// harness's "self" when the sampler is told the run is elsewhere, shows as
// background.
func TestSubNoise(t *testing.T) {
	prev := Snapshot{Host: CPUTimes{User: 1000, System: 500, Steal: 10}, RunUsageUsec: 5_000_000, HarnessCPUSec: 1, At: time.Unix(100, 0)}
	// 2 s window: process time +300 ticks (3 s), run +1.5 s, harness
	// +0.5 s, kthreads +0.2 s → background 0.8 s; steal +0.1 s.
	now := Snapshot{Host: CPUTimes{User: 1200, System: 600, Steal: 20}, RunUsageUsec: 6_500_000, HarnessCPUSec: 1.5, KthreadTicks: 20, At: time.Unix(102, 0)}
	d := now.Sub(prev)
	if d.Noise == nil {
		t.Fatal("no noise")
	}
	if got := d.Noise.BackgroundCPUSec; got < 0.799 || got > 0.801 {
		t.Errorf("background = %v, want 0.8", got)
	}
	if got := d.Noise.StealSec; got < 0.099 || got > 0.101 {
		t.Errorf("steal = %v, want 0.1", got)
	}
	if d.Noise.WindowSec != 2 {
		t.Errorf("window = %v", d.Noise.WindowSec)
	}
	if (Snapshot{}).Sub(Snapshot{}).Noise != nil {
		t.Error("snapshots without the run cgroup must give no noise")
	}
}
