package instrument

import "testing"

func TestParsePingCaptured(t *testing.T) {
	tests := []struct {
		file string
		want pingResult
	}{
		{"ping-loopback.txt", pingResult{Transmitted: 5, Received: 5, LossPercent: 0,
			HasRTT: true, RTTMinMs: 0.039, RTTAvgMs: 0.056, RTTMaxMs: 0.114, RTTMdevMs: 0.028}},
		// lo taken down part-way through, inside a scratch namespace.
		{"ping-loss-partial.txt", pingResult{Transmitted: 100, Received: 35, LossPercent: 65,
			HasRTT: true, RTTMinMs: 0.035, RTTAvgMs: 0.053, RTTMaxMs: 0.099, RTTMdevMs: 0.015}},
		// lo down in a scratch namespace: no rtt line, ping exits 1.
		{"ping-loss100.txt", pingResult{Transmitted: 5, Received: 0, LossPercent: 100}},
		// An unanswered ARP on a veth: "+5 errors" and a lone "pipe 5" line.
		{"ping-errors.txt", pingResult{Transmitted: 5, Received: 0, Errors: 5, LossPercent: 100}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got, err := parsePing(parseTestdata(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParsePingVariants(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want pingResult
	}{
		{"fractional loss, duplicates, pipe and ipg",
			"--- h ping statistics ---\r\n3 packets transmitted, 2 received, +1 duplicates, 33.3333% packet loss, time 20ms\r\n" +
				"rtt min/avg/max/mdev = 1.000/2.500/4.000/1.250 ms, pipe 2, ipg/ewma 10.0/2.4 ms\r\n",
			pingResult{Transmitted: 3, Received: 2, Duplicates: 1, LossPercent: 33.3333,
				HasRTT: true, RTTMinMs: 1, RTTAvgMs: 2.5, RTTMaxMs: 4, RTTMdevMs: 1.25}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePing([]byte(tc.out))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParsePingErrors(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want []string
	}{
		{"empty", "", []string{"ping: empty output"}},
		{"connect error", "ping: connect: Network is unreachable\n", []string{"ping: connect: Network is unreachable"}},
		{"unknown host", "ping: nohost: Name or service not known\n", []string{"ping: nohost: Name or service not known"}},
		{"garbage", "PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.\n", []string{"no statistics line", `"PING 127.0.0.1`}},
		{"truncated before summary", "PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.\n\n--- 127.0.0.1 ping statistics ---\n",
			[]string{"no statistics line"}},
		{"bad counts", "x packets transmitted, 5 received, 0% packet loss, time 57ms\n", []string{"bad statistics line"}},
		{"no loss field", "5 packets transmitted, 5 received, time 57ms\n", []string{"bad statistics line"}},
		{"busybox received form", "3 packets transmitted, 3 packets received, 0% packet loss\n", []string{"bad statistics line"}},
		{"replies without rtt", "5 packets transmitted, 5 received, 0% packet loss, time 57ms\n", []string{"5 replies but no rtt line"}},
		{"bad rtt", "5 packets transmitted, 5 received, 0% packet loss, time 57ms\nrtt min/avg/max/mdev = a/b/c/d ms\n",
			[]string{"bad rtt line"}},
		{"rtt without ms", "5 packets transmitted, 5 received, 0% packet loss\nrtt min/avg/max/mdev = 1/2/3/4\n",
			[]string{"bad rtt line"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parsePing([]byte(tc.out))
			parseWantErr(t, err, tc.want...)
			if r != (pingResult{}) {
				t.Errorf("result not zero on error: %+v", r)
			}
		})
	}
}
