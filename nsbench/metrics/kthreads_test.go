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

// Steal is counted apart from the host's busy CPU: 10 s of user time and
// 4 s of steal are 10 busy CPU-s and 4 of steal, not 14 busy.
func TestSubStealApartFromBusy(t *testing.T) {
	prev := Snapshot{Host: CPUTimes{User: 1000, Steal: 100}}
	prev.HostBusyTicks = prev.Host.BusyTicks()
	now := Snapshot{Host: CPUTimes{User: 2000, Steal: 500}}
	now.HostBusyTicks = now.Host.BusyTicks()
	d := now.Sub(prev)
	if d.HostCPUSec != 10 || d.StealSec != 4 {
		t.Errorf("busy %v CPU-s, steal %v CPU-s: want 10 and 4, apart", d.HostCPUSec, d.StealSec)
	}
}

// A background estimate below zero (the run's microsecond counter ahead
// of the host's ticks) is kept as it came out, not clamped to 0, and its
// share is negative too: a reader can tell it from a measured 0.
func TestSubNoiseBelowZeroKept(t *testing.T) {
	prev := Snapshot{Host: CPUTimes{User: 1000}, RunUsageUsec: 5_000_000, At: time.Unix(100, 0)}
	// 1 s window: process time +100 ticks (1 s), run +1.05 s.
	now := Snapshot{Host: CPUTimes{User: 1100}, RunUsageUsec: 6_050_000, At: time.Unix(101, 0)}
	d := now.Sub(prev)
	if d.Noise == nil {
		t.Fatal("no noise")
	}
	if got := d.Noise.BackgroundCPUSec; got > -0.049 || got < -0.051 {
		t.Errorf("background = %v CPU-s, want -0.05 (not clamped)", got)
	}
	if got := d.Noise.BackgroundPct(); got >= 0 {
		t.Errorf("background share %v %%: want below zero", got)
	}
}

func TestCPUList(t *testing.T) {
	for _, c := range []struct {
		list string
		n    int
	}{{"0", 1}, {"0-1", 2}, {"0-3,6,8-9", 7}, {"", 0}} {
		if n, err := countCPUList(c.list); err != nil || n != c.n {
			t.Errorf("countCPUList(%q) = %d, %v; want %d", c.list, n, err, c.n)
		}
	}
	if _, err := countCPUList("3-1"); err == nil {
		t.Error("a backwards range is accepted")
	}
	if got := formatCPUList([]int{0, 1, 2, 3, 6, 8, 9}); got != "0-3,6,8-9" {
		t.Errorf("formatCPUList = %q", got)
	}
	on, err := OnlineCPUs()
	if err != nil || on.Count < 1 {
		t.Fatalf("online cpus %+v: %v", on, err)
	}
	aff, err := Affinity()
	if err != nil || aff.Count < 1 || aff.Count > on.Count {
		t.Errorf("affinity %+v (online %+v): %v", aff, on, err)
	}
}
