package instrument

import (
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/recovery"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

func TestParseFlap(t *testing.T) {
	for name, want := range map[string]time.Duration{"flap-5s": 5 * time.Second, "flap-30s": 30 * time.Second, "flap-1m30s": 90 * time.Second} {
		f, ok, err := ParseFlap(name)
		if !ok || err != nil || f.Down != want || f.Name() != name {
			t.Errorf("%s: %+v, %v, %v", name, f, ok, err)
		}
	}
	for _, name := range []string{"flap-0s", "flap-500ms", "flap-1.5s", "flap-6m", "flap-x", "flap-"} {
		if _, ok, err := ParseFlap(name); !ok || err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: accepted (%v, %v)", name, ok, err)
		}
	}
	if _, ok, _ := ParseFlap("ping"); ok {
		t.Error("ping read as a flap")
	}
	ins, _, err := Select([]string{"iperf3-1", "flap-2s", "recovery"})
	var names []string
	for _, in := range ins {
		names = append(names, in.Name())
	}
	if err != nil || strings.Join(names, ",") != "iperf3-1,restart-server,restart-relay,flap-2s,flap-5s,flap-30s" {
		t.Errorf("selected %v, %v", names, err)
	}
	if _, _, err := Select([]string{"flap-5s", "recovery"}); err == nil {
		t.Error("flap-5s given twice was accepted")
	}
}

// flapTimeline: requests every 10 ms from 10 ms to 5 s, answered 1 ms
// later except those sent in [from, to).
func flapTimeline(from, to time.Duration) recovery.Timeline {
	t := recovery.Timeline{StartUnixNs: time.Unix(100, 0).UnixNano(), Interval: 10 * time.Millisecond, Dials: 2}
	for s := 10 * time.Millisecond; s <= 5*time.Second; s += 10 * time.Millisecond {
		r := recovery.Request{Sent: s}
		if s < from || s >= to {
			r.Answered = s + time.Millisecond
		}
		t.Requests = append(t.Requests, r)
	}
	return t
}

func TestFlapFigures(t *testing.T) {
	start := time.Unix(100, 0)
	// Down from 2 s to 3 s; back at 3.2 s (answered at 3.201 s).
	m, err := faultFigures(flapTimeline(2*time.Second, 3200*time.Millisecond), start.Add(2*time.Second), start.Add(3*time.Second), FlapBound)
	if err != nil || m.Value < 0.2009 || m.Value > 0.2011 || m.Extra["lost"] != 120 || m.Extra["dials"] != 2 || m.Extra[results.AtLeastKey("value")] != 0 {
		t.Errorf("back at 3.2 s: %+v, %v; want 0.201 s, 120 lost", m, err)
	}
	// The timeline as a series: answered in full before the drop, not at
	// all in it, in full after.
	se := m.Series[0]
	at := func(sec float64) float64 {
		for i, x := range se.T {
			if x >= sec {
				return se.V[i]
			}
		}
		return -1
	}
	if se.Key != "answered" || se.Unit != "%" || at(1.5) != 100 || at(2.5) != 0 || at(4) != 100 {
		t.Errorf("answered series %+v: want 100 %% before, 0 in, 100 after the drop", se)
	}
	// Never back: the timeline ends 2 s after the drop's end, short of the
	// 30 s bound, without an answer.
	if _, err := faultFigures(flapTimeline(2*time.Second, 9*time.Second), start.Add(2*time.Second), start.Add(3*time.Second), FlapBound); err == nil {
		t.Error("a timeline short of the bound read as a recovery")
	}
	// Never back within the bound, on a timeline that outlasts it: a
	// bound, flagged, never a number.
	long := flapTimeline(2*time.Second, time.Hour)
	for s := 5*time.Second + 10*time.Millisecond; s <= 34*time.Second; s += 10 * time.Millisecond {
		long.Requests = append(long.Requests, recovery.Request{Sent: s})
	}
	m, err = faultFigures(long, start.Add(2*time.Second), start.Add(3*time.Second), FlapBound)
	if err != nil || m.Value != FlapBound.Seconds() || m.Extra[results.AtLeastKey("value")] != 1 {
		t.Errorf("never back: %+v, %v; want ≥ %v, flagged", m, err, FlapBound)
	}
	// Nothing answered before the drop: nothing to recover.
	if _, err := faultFigures(flapTimeline(0, 3200*time.Millisecond), start.Add(2*time.Second), start.Add(3*time.Second), FlapBound); err == nil {
		t.Error("a path that carried nothing before the drop read as a recovery")
	}
}
