package recovery

import (
	"testing"
	"time"
)

// TestStreamAcross: the figures read from a stream's log against a fault
// from 1 s to 2 s, with a 5 s bound.
func TestStreamAcross(t *testing.T) {
	fault := Fault{Start: time.Second, End: 2 * time.Second}
	flowing := Stream{Bytes: 1 << 20, First: 10 * ms, Last: 4 * time.Second, End: 4 * time.Second}
	for _, c := range []struct {
		name string
		log  func(Stream) Stream
		want StreamResult
	}{
		{"back 300 ms after the end", func(s Stream) Stream {
			s.Gaps = []Gap{{From: 200 * ms, To: 260 * ms}, {From: 995 * ms, To: 2300 * ms}}
			return s
		}, StreamResult{Resumed: true, GapSec: 1.305}},
		{"rode through, one short gap in the fault", func(s Stream) Stream {
			s.Gaps = []Gap{{From: 1200 * ms, To: 1290 * ms}, {From: 1500 * ms, To: 1560 * ms}}
			return s
		}, StreamResult{Resumed: true, GapSec: 0.09}},
		{"rode through, no gap", func(s Stream) Stream { return s }, StreamResult{Resumed: true}},
		{"back after the bound", func(s Stream) Stream {
			s.Gaps, s.End, s.Last = []Gap{{From: 995 * ms, To: 7500 * ms}}, 8*time.Second, 8*time.Second
			return s
		}, StreamResult{Resumed: false, GapSec: 6.505}},
		{"never back: a bound to the watch's end", func(s Stream) Stream {
			s.Last, s.End = 990*ms, 9*time.Second
			return s
		}, StreamResult{GapSec: 8.01, AtLeast: true}},
		{"reset after the fault", func(s Stream) Stream {
			s.Last, s.End, s.Err, s.ErrAt = 990*ms, 9*time.Second, "read: connection reset by peer", 2100*ms
			return s
		}, StreamResult{GapSec: 8.01, AtLeast: true}},
	} {
		got, err := c.log(flowing).Across(fault, 5*time.Second)
		if err != nil || got.Resumed != c.want.Resumed || got.AtLeast != c.want.AtLeast || !near(got.GapSec, c.want.GapSec) {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	for name, s := range map[string]Stream{
		"no byte":                {Err: "dial: connection refused"},
		"first byte after start": {Bytes: 10, First: 1500 * ms, Last: 3 * time.Second, End: 3 * time.Second},
		"ended before the fault": {Bytes: 10, First: 10 * ms, Last: 500 * ms, End: 3 * time.Second, Err: "read: EOF", ErrAt: 600 * ms},
	} {
		if r, err := s.Across(fault, 5*time.Second); err == nil {
			t.Errorf("%s: %+v, want no figures", name, r)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestProbeWithStreamAcrossACut: the prober and its stream against a real
// echo over loopback, the path cut for 400 ms: the stream carried bytes
// before the cut, none during it, and again on the same connection after
// it, its gap spanning the cut; the probe waits for it to flow again
// before it ends.
func TestProbeWithStreamAcrossACut(t *testing.T) {
	ctx, h, done := echoPath(t, true)
	start := time.Now()
	faults := h.cutAt(t, start, 500*ms, 400*ms)
	tl, err := ProbeWithStream(ctx, h.dial, Interval, 4*time.Second, Ending{Settle: 300 * ms})
	if err != nil {
		t.Fatal(err)
	}
	var fault Fault
	select {
	case fault = <-faults:
	default:
		t.Fatal("the cut did not end within the probe")
	}
	if tl.Stream == nil {
		t.Fatal("no stream in the timeline")
	}
	s := *tl.Stream
	r, err := s.Across(fault, time.Second)
	t.Logf("stream %d bytes, %d gaps %v, ended %v (%s); fault %v–%v: %+v", s.Bytes, len(s.Gaps), s.Gaps, s.End, s.Err, fault.Start, fault.End, r)
	if err != nil {
		t.Fatal(err)
	}
	// The writes held during the cut cross when it ends, within a
	// write's interval and the echo's round trip (generous for a loaded
	// host, where an echo under way at the cut may land just after it);
	// the stream wrote at most its window into the cut (0.4 s at 1 MiB/s
	// would be 400 KiB), so little waits ahead of the prober's requests.
	if held := h.mostHeld(); held == 0 || held > StreamWindow {
		t.Errorf("the cut held %d bytes at most, want some and at most the stream's window (%d)", held, StreamWindow)
	}
	if !r.Resumed || r.AtLeast || r.GapSec < 0.3 || r.GapSec > 0.4+StallAfter.Seconds() {
		t.Errorf("stream %+v: want resumed, without bytes for the 0.4 s cut and at most %v more", r, StallAfter)
	}
	if s.Err != "" || s.Last < fault.End || s.End < s.Last {
		t.Errorf("stream: error %q, last byte %v, watch ended %v: want it flowing at the end", s.Err, s.Last, s.End)
	}
	// At 1 MiB/s for the ~0.5 s before the cut and what follows it.
	if s.Bytes < 256<<10 {
		t.Errorf("stream carried %d bytes, want at least 256 KiB", s.Bytes)
	}
	// Its slices: whole ones to the watch's end, bytes in those before
	// the cut, none in those wholly inside it, none counted twice.
	// (An echo already under way at the cut may land just after it.)
	var sum, before int64
	for i, b := range s.Bins {
		sum += b
		from, to := time.Duration(i)*StreamBin, time.Duration(i+1)*StreamBin
		if to <= fault.Start {
			before += b
		}
		if from >= fault.Start+100*ms && to <= fault.End && b != 0 {
			t.Errorf("slice %v–%v inside the cut: %d bytes", from, to, b)
		}
	}
	if len(s.Bins) != int(s.End/StreamBin) || sum > s.Bytes || before == 0 {
		t.Errorf("%d slices summing to %d bytes, for a watch of %v and %d bytes", len(s.Bins), sum, s.End, s.Bytes)
	}
	done()
}
