package instrument

import (
	"reflect"
	"strings"
	"testing"
)

// The testdata files are real iperf3 3.12 -J outputs captured on loopback
// (see testdata/README.md).

func TestParseIperf3Captured(t *testing.T) {
	tests := []struct {
		file string
		want iperf3Result
	}{
		{"iperf3-tcp-p1-reverse.json", iperf3Result{
			ReceivedBitsPerSec: 14577986734.809175,
			SentBitsPerSec:     14574717397.799458,
			ReceivedBytes:      1822359499,
			SentBytes:          1823211520,
			Retransmits:        13,
			HasRetransmits:     true,
			SenderCongestion:   "bbr",
			ReceiverCongestion: "bbr",
			DurationSec:        1.000061,
			TestDurationSec:    1,
			Streams:            1,
			Reverse:            true,
		}},
		{"iperf3-tcp-p4-reverse.json", iperf3Result{
			ReceivedBitsPerSec: 17472351855.258633,
			SentBitsPerSec:     17603314397.06213,
			ReceivedBytes:      2184445846,
			SentBytes:          2202009600,
			Retransmits:        19,
			HasRetransmits:     true,
			SenderCongestion:   "bbr",
			ReceiverCongestion: "bbr",
			DurationSec:        1.000184,
			TestDurationSec:    1,
			Streams:            4,
			Reverse:            true,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got, err := parseIperf3(parseTestdata(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Intervals) != 1 || got.Intervals[0].End != tc.want.DurationSec {
				t.Errorf("intervals %+v: want one, ending at %v", got.Intervals, tc.want.DurationSec)
			}
			got.Intervals = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseIperf3Errors(t *testing.T) {
	full := parseTestdata(t, "iperf3-tcp-p1-reverse.json")
	noSumReceived := strings.Replace(string(full), `"sum_received"`, `"sum_received_x"`, 1)
	tests := []struct {
		name string
		out  []byte
		want []string
	}{
		{"refused", parseTestdata(t, "iperf3-error-refused.json"),
			[]string{"iperf3: error - unable to connect to server: Connection refused"}},
		{"busy", parseTestdata(t, "iperf3-error-busy.json"),
			[]string{"iperf3: error - the server is busy running a test. try again later"}},
		{"truncated", full[:len(full)/2], []string{"not valid JSON", `output begins "{"`}},
		{"garbage", []byte("iperf3: error - unable to connect to server: Connection refused\nmore\n"),
			[]string{"not valid JSON", `"iperf3: error - unable to connect to server: Connection refused"`}},
		{"long garbage line", []byte(strings.Repeat("z", 1000)),
			[]string{strings.Repeat("z", parseMaxQuote) + "..."}},
		{"empty", nil, []string{"iperf3: empty output"}},
		{"blank", []byte("\n  \n"), []string{"iperf3: empty output"}},
		{"no sum_received", []byte(noSumReceived), []string{"no end.sum_received"}},
		{"empty end", []byte(`{"start":{},"intervals":[],"end":{}}`), []string{"no end.sum_received"}},
		{"udp given to tcp parser", parseTestdata(t, "iperf3-udp-reverse.json"), []string{`expected a TCP test, got protocol "UDP"`}},
		// An error field wins even when results are present (a test that
		// failed after the end block was written).
		{"error with results", []byte(strings.Replace(string(full), `"intervals"`, `"error": "control socket has closed unexpectedly", "intervals"`, 1)),
			[]string{"iperf3: error - control socket has closed unexpectedly"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseIperf3(tc.out)
			parseWantErr(t, err, tc.want...)
			if !reflect.DeepEqual(r, iperf3Result{}) {
				t.Errorf("result not zero on error: %+v", r)
			}
			if len(err.Error()) > 600 {
				t.Errorf("error too long (%d bytes): %q", len(err.Error()), err)
			}
		})
	}
}

func TestParseIperf3NoRetransmitsOrCongestion(t *testing.T) {
	out := `{"start":{"test_start":{"protocol":"TCP","num_streams":1,"duration":10,"reverse":0}},
	"end":{"sum_sent":{"seconds":10,"bytes":100,"bits_per_second":80},
	       "sum_received":{"seconds":10.5,"bytes":90,"bits_per_second":72}}}`
	got, err := parseIperf3([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := iperf3Result{ReceivedBitsPerSec: 72, SentBitsPerSec: 80, ReceivedBytes: 90, SentBytes: 100,
		DurationSec: 10.5, TestDurationSec: 10, Streams: 1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseIperf3UDPCaptured(t *testing.T) {
	tests := []struct {
		file string
		want iperf3UDPResult
	}{
		// -R: the client receives. sum_received.packets (136304) is the
		// highest sequence number seen; 136330 were sent; 639 gaps.
		{"iperf3-udp-reverse.json", iperf3UDPResult{
			PacketsSent:        136330,
			ReceiverPackets:    136304,
			Lost:               639,
			LostPercent:        0.4687156165187413,
			PacketsReceived:    135665, // = 27133000 bytes / 200
			Unreceived:         665,
			ReceivedPPS:        135665 / 1.000016,
			JitterMs:           0.008971341077226847,
			DurationSec:        1.000016,
			ReceivedBitsPerSec: 217060527.03156748,
			SentBitsPerSec:     217635925.1731834,
			BlockSize:          200,
			Reverse:            true,
		}},
		// Forward: the server receives; its counts come back over the
		// control connection into the same fields.
		{"iperf3-udp-forward.json", iperf3UDPResult{
			PacketsSent:        156520,
			ReceiverPackets:    156513,
			Lost:               1562,
			LostPercent:        0.9979555328392538,
			PacketsReceived:    154951, // = 30990200 bytes / 200
			Unreceived:         1569,
			ReceivedPPS:        154951 / 1.000104,
			JitterMs:           0.00825287981111856,
			DurationSec:        1.000104,
			ReceivedBitsPerSec: 247895818.83484116,
			SentBitsPerSec:     250424236.84865773,
			BlockSize:          200,
			Reverse:            false,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got, err := parseIperf3UDP(parseTestdata(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseIperf3UDPErrors(t *testing.T) {
	udp := parseTestdata(t, "iperf3-udp-reverse.json")
	tests := []struct {
		name string
		out  []byte
		want []string
	}{
		{"refused", parseTestdata(t, "iperf3-error-refused.json"), []string{"iperf3: error - unable to connect to server: Connection refused"}},
		{"tcp given to udp parser", parseTestdata(t, "iperf3-tcp-p1-reverse.json"), []string{`expected a UDP test, got protocol "TCP"`}},
		{"truncated", udp[:len(udp)-40], []string{"not valid JSON"}},
		{"empty", []byte{}, []string{"iperf3: empty output"}},
		{"no packets", []byte(`{"start":{"test_start":{"protocol":"UDP"}},"end":{"sum_sent":{"seconds":1},"sum_received":{"seconds":1}}}`),
			[]string{"lacks packets"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseIperf3UDP(tc.out)
			parseWantErr(t, err, tc.want...)
			if r != (iperf3UDPResult{}) {
				t.Errorf("result not zero on error: %+v", r)
			}
		})
	}
}

// A client's intervals keep iperf3's own start, end and bytes; a failed
// run is its error, and output without intervals says to ask for them.
func TestIPerf3ReceivedIntervals(t *testing.T) {
	full := parseTestdata(t, "iperf3-tcp-p1-reverse.json")
	ivs, err := IPerf3ReceivedIntervals(full)
	if err != nil || !reflect.DeepEqual(ivs, []IPerf3Interval{{Start: 0, End: 1.000061, Bytes: 1822359499}}) {
		t.Errorf("intervals %+v, %v", ivs, err)
	}
	if _, err := IPerf3ReceivedIntervals(parseTestdata(t, "iperf3-error-refused.json")); err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("refused run: %v", err)
	}
	none := strings.Replace(string(full), `"intervals"`, `"intervals_x"`, 1)
	if _, err := IPerf3ReceivedIntervals([]byte(none)); err == nil || !strings.Contains(err.Error(), "no reporting intervals") {
		t.Errorf("no intervals: %v", err)
	}
}
