package instrument

import (
	"strings"
	"testing"
)

func TestParseNetperfRRCaptured(t *testing.T) {
	tests := []struct {
		file string
		want rrResult
	}{
		// -P 0 before "--": the CSV line alone.
		{"netperf-rr-p0.txt", rrResult{TransPerSec: 41468.75, MeanLatencyUs: 24.02, P50LatencyUs: 19, P99LatencyUs: 80}},
		// -P 1: banner and header lines first.
		{"netperf-rr-p1.txt", rrResult{TransPerSec: 49976.66, MeanLatencyUs: 19.93, P50LatencyUs: 19, P99LatencyUs: 62}},
		// No -P: same as -P 1.
		{"netperf-rr-default.txt", rrResult{TransPerSec: 44840.57, MeanLatencyUs: 22.22, P50LatencyUs: 18, P99LatencyUs: 77}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got, err := parseNetperfRR(parseTestdata(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseNetperfRRVariants(t *testing.T) {
	for _, out := range []string{"41468.75,24.02,19,80", "41468.75,24.02,19,80\r\n", "\n41468.75, 24.02, 19, 80\n\n"} {
		got, err := parseNetperfRR([]byte(out))
		if err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		if want := (rrResult{41468.75, 24.02, 19, 80}); got != want {
			t.Fatalf("%q: got %+v want %+v", out, got, want)
		}
	}
}

func TestParseNetperfRRErrors(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want []string
	}{
		{"refused (captured)", string(parseTestdata(t, "netperf-rr-refused.txt")), []string{
			"netperf: establish control: are you sure there is a netserver listening on 127.0.0.1 at port 22899?",
			"; establish_control could not establish the control connection",
		}},
		{"empty", "", []string{"netperf: empty output"}},
		{"blank", " \n\n", []string{"netperf: empty output"}},
		{"garbage", "hello world\n", []string{`netperf: unexpected output "hello world"`}},
		{"three fields", "41468.75,24.02,19\n", []string{`unexpected output "41468.75,24.02,19"`}},
		{"five fields", "1,2,3,4,5\n", []string{`unexpected output "1,2,3,4,5"`}},
		{"non-number", "41468.75,abc,19,80\n", []string{"unexpected output"}},
		{"nan", "NaN,1,2,3\n", []string{"unexpected output"}},
		{"result plus junk", "41468.75,24.02,19,80\nsomething else\n", []string{`unexpected output "something else"`}},
		{"header only", "Throughput,Mean Latency Microseconds,50th Percentile Latency Microseconds,99th Percentile Latency Microseconds\n",
			[]string{"no result line", "Throughput,"}},
		{"two results", "1,2,3,4\n5,6,7,8\n", []string{"more than one result line"}},
		{"negative latency", "41468.75,24.02,-1,80\n", []string{"negative value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseNetperfRR([]byte(tc.out))
			parseWantErr(t, err, tc.want...)
			if r != (rrResult{}) {
				t.Errorf("result not zero on error: %+v", r)
			}
		})
	}
}

func TestParseNetperfRRLongGarbageIsCut(t *testing.T) {
	_, err := parseNetperfRR([]byte(strings.Repeat("q", 5000)))
	parseWantErr(t, err, "unexpected output", "...")
	if len(err.Error()) > 400 {
		t.Fatalf("error not cut: %d bytes", len(err.Error()))
	}
}
