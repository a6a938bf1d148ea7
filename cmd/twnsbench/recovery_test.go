package main

import (
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestFlapRecovery: the client's link down for 1 s under Pure SSH and
// WireGuard, real programs end to end: each recovers within a few
// seconds of the link's return (a number, not a bound), the requests of
// the drop are lost, an SSH session through the tunnel survives it, a TCP
// stream through it carries bytes again on its connection,
// WireGuard's prober had to open a new connection (its
// old one stalled across the drop), and the run goes on and leaves
// nothing behind — the link came up again with its routes.
func TestFlapRecovery(t *testing.T) {
	nstest.RequireRoot(t)
	before := nsbench.Leftovers()
	doc, _ := runAndRead(t, "--transports", "ssh,wireguard", "--instruments", "flap-1s,tcp_rr", "--wan", "off",
		"--runs", "1", "--warmup", "0", "--duration", "1s")
	got := map[string]results.Sample{}
	for _, s := range doc.Samples {
		got[s.Transport+"/"+s.Instrument] = s
	}
	for _, tr := range []string{"ssh", "wireguard"} {
		s, ok := got[tr+"/flap-1s"]
		if !ok {
			t.Fatalf("%s: no flap-1s sample (failures %+v)", tr, doc.Failures)
		}
		t.Logf("%s: back %.3f s after the link, %v requests lost, %v connections", tr, s.Value, s.Extra["lost"], s.Extra["dials"])
		if s.Value <= 0 || s.Value > 5 || s.Extra[results.AtLeastKey("value")] != 0 {
			t.Errorf("%s: recovery %.3f s (bound flag %v), want a number within 5 s", tr, s.Value, s.Extra[results.AtLeastKey("value")])
		}
		if s.Extra["session_survived"] != 1 {
			t.Errorf("%s: the SSH session through the tunnel did not survive a 1 s drop", tr)
		}
		// The TCP stream beside the prober kept its connection across the
		// drop (TCP retransmits once the link is back) and carried no byte
		// for at least the drop.
		gap := s.Extra[results.StreamGapSec]
		t.Logf("%s: stream resumed %v, %.3f s without a byte (%s)", tr, s.Extra[results.StreamResumed], gap, s.Method)
		if s.Extra[results.StreamResumed] != 1 || gap < 0.9 || gap > 10 || s.Extra[results.AtLeastKey(results.StreamGapSec)] != 0 {
			t.Errorf("%s: stream resumed %v after %.3f s without a byte (bound flag %v, %q): want resumed, 0.9–10 s",
				tr, s.Extra[results.StreamResumed], gap, s.Extra[results.AtLeastKey(results.StreamGapSec)], s.Method)
		}
		// Its bytes over time: flowing before the drop, none for some
		// slices in it.
		if !streamStopped(s) {
			t.Errorf("%s: the stream series shows no bytes before the drop and none in it: %+v", tr, s.Series)
		}
		if s.Extra["lost"] < 50 {
			t.Errorf("%s: %v requests lost across a 1 s drop, want about 100", tr, s.Extra["lost"])
		}
		// The next sample crossed the same path: the link is back.
		if rr, ok := got[tr+"/tcp_rr"]; !ok || rr.Value <= 0 {
			t.Errorf("%s: no tcp_rr after the flap: the link did not come back", tr)
		}
	}
	if w := got["wireguard/flap-1s"]; w.Extra["dials"] < 2 {
		t.Errorf("wireguard: %v connections: the stalled one was never given up", w.Extra["dials"])
	}
	if left := newLeftovers(before); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// streamStopped says whether s's stream series has bytes in some slice
// and none in a later one.
func streamStopped(s results.Sample) bool {
	for _, se := range s.Series {
		if se.Key != "stream" {
			continue
		}
		flowed := false
		for _, v := range se.V {
			if v > 0 {
				flowed = true
			} else if flowed {
				return true
			}
		}
	}
	return false
}
