package metrics

import (
	"testing"
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
