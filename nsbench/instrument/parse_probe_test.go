package instrument

import (
	"math"
	"regexp"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// TestParseIperf3Bidir: down is what the client received from the server,
// up what the server received from the client, each with its own
// retransmits and per-interval sums (testdata/README.md).
func TestParseIperf3Bidir(t *testing.T) {
	r, err := parseIperf3Bidir(parseTestdata(t, "iperf3-tcp-p4-bidir.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.DownBitsPerSec != 2453853088.868859 || r.UpBitsPerSec != 7001445226.19382 ||
		r.DownBytes != 614924235 || r.UpBytes != 1754529792 || r.Streams != 4 || r.DurationSec != 2.004763 {
		t.Errorf("totals %+v", r)
	}
	if !r.HasRetransmits || r.UpRetransmits != 22 || r.DownRetransmits != 23 {
		t.Errorf("retransmits up %d down %d (%v)", r.UpRetransmits, r.DownRetransmits, r.HasRetransmits)
	}
	if len(r.Down) != 2 || len(r.Up) != 2 ||
		r.Down[0] != (iperf3Interval{End: 1.002371, BitsPerSecond: 1054464521.5887767}) ||
		r.Up[1] != (iperf3Interval{End: 2.000074, BitsPerSecond: 5938094108.319444}) {
		t.Errorf("intervals down %+v up %+v", r.Down, r.Up)
	}
	// A one-way run is not a --bidir run.
	_, err = parseIperf3Bidir(parseTestdata(t, "iperf3-tcp-p4-reverse.json"))
	parseWantErr(t, err, "not a --bidir test")
	_, err = parseIperf3Bidir(parseTestdata(t, "iperf3-error-refused.json"))
	parseWantErr(t, err, "Connection refused")
}

func TestParsePingProbes(t *testing.T) {
	ps, sum, err := parsePingProbes(parseTestdata(t, "ping-probes-idle.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 10 || sum.Transmitted != 10 || sum.LossPercent != 0 {
		t.Fatalf("%d probes, summary %+v", len(ps), sum)
	}
	// [1796171305.494993] … time=0.036 ms: sent 36 µs before the reply.
	if !near(ps[0].At, 1796171305.494993-0.000036) || ps[0].RTTMs != 0.036 || ps[0].Seq != 1 || ps[9].RTTMs != 0.034 || ps[9].Seq != 10 {
		t.Errorf("first %+v last %+v", ps[0], ps[9])
	}
	ps, _, err = parsePingProbes(parseTestdata(t, "ping-probes-loaded.txt"))
	if err != nil || len(ps) != 29 {
		t.Errorf("loaded: %d probes, %v", len(ps), err)
	}
	// Every probe unanswered (ICMP errors): no readings, the summary's
	// figures; the caller decides that this is a failure.
	ps, sum, err = parsePingProbes(parseTestdata(t, "ping-probes-unreach.txt"))
	if err != nil || len(ps) != 0 || sum.Transmitted != 5 || sum.Errors != 5 {
		t.Errorf("unreachable: %v %+v %v", ps, sum, err)
	}
	// Without -D the replies carry no time: refused, not misread.
	noD := regexp.MustCompile(`(?m)^\[[0-9.]+\] `).ReplaceAll(parseTestdata(t, "ping-probes-idle.txt"), nil)
	_, _, err = parsePingProbes(noD)
	parseWantErr(t, err, "0 reply lines but the summary says 10 received")
	bad := strings.Replace(string(parseTestdata(t, "ping-probes-idle.txt")), "time=0.036 ms", "time=x ms", 1)
	_, _, err = parsePingProbes([]byte(bad))
	parseWantErr(t, err, "bad reply line")
}

func TestParseNetperfDemo(t *testing.T) {
	ps, final, err := parseNetperfDemo(parseTestdata(t, "netperf-rr-demo.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// 17926.06,Trans/s,0.100,1796171309.637: a mean round trip of
	// 1/17926.06 s over the interval ending then.
	if len(ps) != 10 || !near(ps[0].At, 1796171309.587) || !near(ps[0].RTTMs, 1000/17926.06) {
		t.Errorf("%d readings, first %+v", len(ps), ps[0])
	}
	if final.TransPerSec != 41667.67 || final.P50LatencyUs != 18 {
		t.Errorf("final line %+v", final)
	}
	// Under load the rate falls, so the round trip grows.
	loaded, _, err := parseNetperfDemo(parseTestdata(t, "netperf-rr-demo-loaded.txt"))
	if err != nil || len(loaded) != 27 || loaded[1].RTTMs < 2*ps[5].RTTMs {
		t.Errorf("loaded: %d readings (%v), err %v", len(loaded), loaded, err)
	}
	_, _, err = parseNetperfDemo(parseTestdata(t, "netperf-rr-refused.txt"))
	parseWantErr(t, err, "netserver")
	_, _, err = parseNetperfDemo(parseTestdata(t, "netperf-rr-p0.txt"))
	parseWantErr(t, err, "no interim results")
	_, _, err = parseNetperfDemo([]byte("0.00,Trans/s,0.100,1796171309.637\n41667.67,23.83,18,118"))
	parseWantErr(t, err, "without transactions")
}
