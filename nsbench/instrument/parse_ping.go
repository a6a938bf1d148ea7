package instrument

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// pingResult is the summary of an iputils `ping -q -c N -i 0.01 HOST`.
type pingResult struct {
	Transmitted int
	Received    int
	// Duplicates and Errors are the optional "+N duplicates" and
	// "+N errors" (ICMP errors such as host unreachable) counts.
	Duplicates int
	Errors     int
	// LossPercent is ping's own "% packet loss" figure (it may be
	// fractional, e.g. 33.3333).
	LossPercent float64
	// HasRTT is false when ping printed no rtt line: every probe was lost
	// (LossPercent 100). The RTT fields are then zero and meaningless.
	HasRTT                                  bool
	RTTMinMs, RTTAvgMs, RTTMaxMs, RTTMdevMs float64
}

// parsePing reads iputils ping's summary:
//
//	5 packets transmitted, 5 received, 0% packet loss, time 57ms
//	rtt min/avg/max/mdev = 0.039/0.056/0.114/0.028 ms
//
// 100 % loss (no rtt line, ping exits 1) is a valid result with HasRTT
// false. Output without a statistics line (e.g. "ping: connect: Network is
// unreachable", exit 2) is an error carrying ping's first line.
func parsePing(out []byte) (pingResult, error) {
	if len(strings.TrimSpace(string(out))) == 0 {
		return pingResult{}, errors.New("ping: empty output")
	}
	var (
		r        pingResult
		gotStats bool
	)
	for _, l := range parseLines(out) {
		switch {
		case strings.Contains(l, " packets transmitted, "):
			if gotStats {
				return pingResult{}, errors.New("ping: more than one statistics line")
			}
			if err := parsePingStats(l, &r); err != nil {
				return pingResult{}, err
			}
			gotStats = true
		case strings.HasPrefix(l, "rtt ") || strings.HasPrefix(l, "round-trip "):
			if err := parsePingRTT(l, &r); err != nil {
				return pingResult{}, err
			}
		}
	}
	if !gotStats {
		for _, l := range parseNonBlank(out, 0) {
			if strings.HasPrefix(l, "ping:") {
				return pingResult{}, errors.New(l)
			}
		}
		return pingResult{}, fmt.Errorf("ping: no statistics line, %s", parseDescribe(out))
	}
	if r.Received > 0 && !r.HasRTT {
		return pingResult{}, fmt.Errorf("ping: %d replies but no rtt line", r.Received)
	}
	if r.Received == 0 && r.HasRTT {
		return pingResult{}, errors.New("ping: rtt line with 0 replies")
	}
	return r, nil
}

// parsePingStats parses "N packets transmitted, M received[, +D duplicates]
// [, +C corrupted][, +E errors], P% packet loss[, time Tms]".
func parsePingStats(l string, r *pingResult) error {
	var gotRecv, gotLoss bool
	for _, part := range strings.Split(l, ",") {
		part = strings.TrimSpace(part)
		num, rest, _ := strings.Cut(part, " ")
		switch {
		case rest == "packets transmitted":
			n, err := strconv.Atoi(num)
			if err != nil {
				return fmt.Errorf("ping: bad statistics line %q", parseCut(l))
			}
			r.Transmitted = n
		case rest == "received":
			n, err := strconv.Atoi(num)
			if err != nil {
				return fmt.Errorf("ping: bad statistics line %q", parseCut(l))
			}
			r.Received, gotRecv = n, true
		case rest == "duplicates":
			n, err := strconv.Atoi(strings.TrimPrefix(num, "+"))
			if err != nil {
				return fmt.Errorf("ping: bad statistics line %q", parseCut(l))
			}
			r.Duplicates = n
		case rest == "errors":
			n, err := strconv.Atoi(strings.TrimPrefix(num, "+"))
			if err != nil {
				return fmt.Errorf("ping: bad statistics line %q", parseCut(l))
			}
			r.Errors = n
		case rest == "packet loss":
			x, err := strconv.ParseFloat(strings.TrimSuffix(num, "%"), 64)
			if err != nil || !strings.HasSuffix(num, "%") {
				return fmt.Errorf("ping: bad statistics line %q", parseCut(l))
			}
			r.LossPercent, gotLoss = x, true
		}
	}
	if !gotRecv || !gotLoss {
		return fmt.Errorf("ping: bad statistics line %q", parseCut(l))
	}
	return nil
}

// parsePingRTT parses "rtt min/avg/max/mdev = a/b/c/d ms[, pipe N]...".
func parsePingRTT(l string, r *pingResult) error {
	bad := fmt.Errorf("ping: bad rtt line %q", parseCut(l))
	_, vals, ok := strings.Cut(l, " = ")
	if !ok {
		return bad
	}
	vals, _, _ = strings.Cut(vals, ",")
	vals, ok = strings.CutSuffix(strings.TrimSpace(vals), " ms")
	if !ok {
		return bad
	}
	f := strings.Split(vals, "/")
	if len(f) < 3 || len(f) > 4 {
		return bad
	}
	var v [4]float64
	for i, s := range f {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || x < 0 {
			return bad
		}
		v[i] = x
	}
	r.RTTMinMs, r.RTTAvgMs, r.RTTMaxMs, r.RTTMdevMs = v[0], v[1], v[2], v[3]
	r.HasRTT = true
	return nil
}
