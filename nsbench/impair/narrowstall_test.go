package impair

import (
	"testing"
	"time"
)

// readings are the hop's too-big counts at one-second readings from 0 s,
// with icmp ICMP sent at each drop when icmp is set.
func readings(tooBig []uint64, icmp bool) []NarrowReading {
	var rs []NarrowReading
	for i, n := range tooBig {
		c := NarrowCounts{TooBig: n}
		if icmp {
			c.ICMPSent = n
		}
		rs = append(rs, NarrowReading{At: time.Duration(i) * time.Second, Counts: c})
	}
	return rs
}

func TestJudgeSetUp(t *testing.T) {
	// A TCP segment over the MTU, dropped silently, retransmitted after
	// 0.2, 0.6, 1.4, 3.0, 6.2 s: cumulative drops at each whole second.
	blackHole := []uint64{0, 3, 4, 4, 5, 5, 5, 6, 6, 6, 6}
	for _, tc := range []struct {
		name   string
		rs     []NarrowReading
		stall  bool
		tooBig uint64
		recent uint64
		icmp   uint64
	}{
		{name: "no readings", rs: nil},
		{name: "black hole, 9 s: too early", rs: readings(blackHole[:10], false)},
		{name: "black hole, 10 s", rs: readings(blackHole, false), stall: true, tooBig: 6, recent: 2},
		{name: "offset counts: only the set-up's own drops count",
			rs:    readings([]uint64{100, 103, 104, 104, 105, 105, 105, 106, 106, 106, 106}, false),
			stall: true, tooBig: 6, recent: 2},
		{name: "never met the hop: slow for another reason", rs: readings(make([]uint64, 15), false)},
		{name: "met the hop, then learnt its MTU (drops stopped at 2 s)",
			rs: readings([]uint64{0, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, true)},
		{name: "told by ICMP each time and still stuck", rs: readings([]uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, true),
			stall: true, tooBig: 10, recent: 8, icmp: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := JudgeSetUp(tc.rs)
			if (got != nil) != tc.stall {
				t.Fatalf("JudgeSetUp = %v, want stalled %v", got, tc.stall)
			}
			if got == nil {
				return
			}
			if got.TooBig != tc.tooBig || got.Recent != tc.recent || got.ICMPSent != tc.icmp || got.After != 10*time.Second {
				t.Errorf("JudgeSetUp = %+v, want too big %d, recent %d, ICMP %d after 10 s", *got, tc.tooBig, tc.recent, tc.icmp)
			}
		})
	}
}

// A reading taken late (the hop answered slowly) still judges by the
// window's span, not by the readings' count.
func TestJudgeSetUpUnevenReadings(t *testing.T) {
	rs := []NarrowReading{
		{At: 0, Counts: NarrowCounts{}},
		{At: 1500 * time.Millisecond, Counts: NarrowCounts{TooBig: 4}},
		{At: 11 * time.Second, Counts: NarrowCounts{TooBig: 6}},
	}
	got := JudgeSetUp(rs)
	if got == nil || got.Recent != 2 || got.TooBig != 6 {
		t.Fatalf("JudgeSetUp = %+v, want a stall with 2 of 6 drops recent (after the 1.5 s reading)", got)
	}
	rs[2].Counts.TooBig = 4
	if got := JudgeSetUp(rs); got != nil {
		t.Fatalf("JudgeSetUp = %+v, want none: no drop since 1.5 s", got)
	}
}
