package instrument

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// rrResult is one `netperf -t TCP_RR -P 0 -- -r 64,64 -P LPORT,RPORT
// -o THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY` run.
type rrResult struct {
	TransPerSec   float64 // THROUGHPUT, transactions/s
	MeanLatencyUs float64 // MEAN_LATENCY, µs
	P50LatencyUs  float64 // P50_LATENCY, µs
	P99LatencyUs  float64 // P99_LATENCY, µs
}

// parseNetperfRR reads netperf's output for the form above. With -P 0
// before "--" netperf 2.7.0 prints the CSV line alone; with -P 1 (the
// default) it first prints a "MIGRATED TCP REQUEST/RESPONSE TEST ..." banner
// and a "Throughput,Mean Latency Microseconds,..." header, both accepted.
// Any other line is rejected. netperf writes its own errors (e.g.
// "establish control: are you sure there is a netserver listening on ...")
// to stdout and exits 255; those lines become the error.
func parseNetperfRR(out []byte) (rrResult, error) {
	if len(strings.TrimSpace(string(out))) == 0 {
		return rrResult{}, errors.New("netperf: empty output")
	}
	var (
		res     rrResult
		found   bool
		unknown []string
	)
	for _, l := range parseLines(out) {
		switch {
		case l == "":
			continue
		case strings.HasPrefix(l, "MIGRATED ") && strings.Contains(l, " TEST "):
			continue // -P 1 banner
		case strings.HasPrefix(l, "Throughput,"):
			continue // -P 1 header of the -o selectors
		}
		r, ok := parseRRLine(l)
		if !ok {
			unknown = append(unknown, parseCut(l))
			continue
		}
		if found {
			return rrResult{}, fmt.Errorf("netperf: more than one result line in output: %q", parseNonBlank(out, 4))
		}
		res, found = r, true
	}
	if len(unknown) > 0 {
		if len(unknown) > 2 {
			unknown = unknown[:2]
		}
		msg := strings.Join(unknown, "; ")
		if !found && looksLikeNetperfError(msg) {
			return rrResult{}, fmt.Errorf("netperf: %s", msg)
		}
		return rrResult{}, fmt.Errorf("netperf: unexpected output %q", msg)
	}
	if !found {
		return rrResult{}, fmt.Errorf("netperf: no result line, %s", parseDescribe(out))
	}
	if res.TransPerSec < 0 || res.MeanLatencyUs < 0 || res.P50LatencyUs < 0 || res.P99LatencyUs < 0 {
		return rrResult{}, fmt.Errorf("netperf: negative value in result line %q (a latency netperf could not compute?)", parseFirstLine(out))
	}
	return res, nil
}

// parseRRLine parses "THROUGHPUT,MEAN,P50,P99".
func parseRRLine(l string) (rrResult, bool) {
	f := strings.Split(l, ",")
	if len(f) != 4 {
		return rrResult{}, false
	}
	var v [4]float64
	for i, s := range f {
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return rrResult{}, false
		}
		v[i] = x
	}
	return rrResult{TransPerSec: v[0], MeanLatencyUs: v[1], P50LatencyUs: v[2], P99LatencyUs: v[3]}, true
}

// looksLikeNetperfError reports whether msg reads like one of netperf's own
// diagnostics rather than unrelated output.
func looksLikeNetperfError(msg string) bool {
	m := strings.ToLower(msg)
	for _, k := range []string{"establish", "netserver", "netperf", "errno", "error", "failed", "could not", "unable", "refused", "timed out", "no response"} {
		if strings.Contains(m, k) {
			return true
		}
	}
	return false
}
