package instrument

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// probeRTT is one latency reading of a probe: At is when it was taken, in
// Unix seconds (a ping's send time; the middle of a netperf interval), RTTMs
// the round trip in milliseconds, Seq a ping's icmp_seq (0 for netperf),
// Span the netperf interval's length in seconds (0 for ping: a moment),
// Transactions the interval's completed transactions (rate × length).
type probeRTT struct {
	At           float64
	RTTMs        float64
	Seq          int
	Span         float64
	Transactions float64
}

// parsePingProbes reads iputils `ping -n -D -i 0.1 -w SECS HOST`: one line
// per reply,
//
//	[1796171305.494993] 64 bytes from 10.9.9.1: icmp_seq=1 ttl=64 time=0.036 ms
//
// whose bracketed time is when the reply arrived (so the probe was sent RTT
// earlier), then the summary that parsePing reads. Duplicates ("(DUP!)")
// are skipped; "From …" lines (ICMP errors) are counted by the summary.
func parsePingProbes(out []byte) ([]probeRTT, pingResult, error) {
	sum, err := parsePing(out)
	if err != nil {
		return nil, pingResult{}, err
	}
	var probes []probeRTT
	for _, l := range parseLines(out) {
		if !strings.HasPrefix(l, "[") || !strings.Contains(l, " bytes from ") || strings.HasSuffix(l, "(DUP!)") {
			continue
		}
		p, ok := parsePingReply(l)
		if !ok {
			return nil, pingResult{}, fmt.Errorf("ping: bad reply line %q", parseCut(l))
		}
		probes = append(probes, p)
	}
	if len(probes) != sum.Received {
		return nil, pingResult{}, fmt.Errorf("ping: %d reply lines but the summary says %d received (was -D given?)", len(probes), sum.Received)
	}
	return probes, sum, nil
}

// parsePingReply parses one "[TS] N bytes from A: icmp_seq=S ttl=T time=X ms".
func parsePingReply(l string) (probeRTT, bool) {
	ts, rest, ok := strings.Cut(strings.TrimPrefix(l, "["), "] ")
	if !ok {
		return probeRTT{}, false
	}
	at, err := strconv.ParseFloat(ts, 64)
	if err != nil {
		return probeRTT{}, false
	}
	_, seq, ok := strings.Cut(rest, " icmp_seq=")
	if !ok {
		return probeRTT{}, false
	}
	seq, _, _ = strings.Cut(seq, " ")
	n, err := strconv.Atoi(seq)
	if err != nil || n < 1 {
		return probeRTT{}, false
	}
	_, t, ok := strings.Cut(rest, " time=")
	if !ok {
		return probeRTT{}, false
	}
	t, ok = strings.CutSuffix(strings.TrimSpace(t), " ms")
	if !ok {
		return probeRTT{}, false
	}
	rtt, err := strconv.ParseFloat(t, 64)
	if err != nil || rtt < 0 || math.IsInf(rtt, 0) {
		return probeRTT{}, false
	}
	return probeRTT{At: at - rtt/1000, RTTMs: rtt, Seq: n}, true
}

// parseNetperfDemo reads `netperf -t TCP_RR -P 0 -D -0.1 -- … -o
// THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY`: netperf 2.7.0's demo
// mode prints an interim line at least every 0.1 s,
//
//	17926.06,Trans/s,0.100,1796171309.637
//
// (transactions per second, the interval's length and its end in Unix
// seconds), then the final result line that parseNetperfRR reads. With one
// transaction in flight, an interval's mean round trip is 1/rate — how
// flent turns netperf's RR rates into latency; each becomes one probeRTT
// at the interval's middle.
func parseNetperfDemo(out []byte) ([]probeRTT, rrResult, error) {
	var probes []probeRTT
	var rest []string
	for _, l := range parseLines(out) {
		f := strings.Split(l, ",")
		if len(f) != 4 || f[1] != "Trans/s" {
			rest = append(rest, l)
			continue
		}
		var v [3]float64
		for i, s := range []string{f[0], f[2], f[3]} {
			x, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, rrResult{}, fmt.Errorf("netperf: bad interim line %q", parseCut(l))
			}
			v[i] = x
		}
		rate, interval, end := v[0], v[1], v[2]
		if rate <= 0 || interval <= 0 {
			return nil, rrResult{}, fmt.Errorf("netperf: interim line without transactions %q", parseCut(l))
		}
		probes = append(probes, probeRTT{At: end - interval/2, RTTMs: 1000 / rate, Span: interval, Transactions: rate * interval})
	}
	final, err := parseNetperfRR([]byte(strings.Join(rest, "\n")))
	if err != nil {
		return nil, rrResult{}, err
	}
	if len(probes) == 0 {
		return nil, rrResult{}, errors.New("netperf: no interim results (demo mode -D not compiled in?)")
	}
	return probes, final, nil
}
