package wan

import (
	"strings"
	"testing"
	"time"
)

func TestParseWAN(t *testing.T) {
	for _, tc := range []struct {
		in      string
		off     bool
		rtt     time.Duration
		loss    float64
		wantErr string
	}{
		{in: "off", off: true},
		{in: "30ms:0.1%", rtt: 30 * time.Millisecond, loss: 0.1},
		{in: "0ms:0%", rtt: 0, loss: 0},
		{in: "2.5ms:1%", rtt: 2500 * time.Microsecond, loss: 1},
		{in: "30xx", wantErr: "want off or RTTms:LOSS%"},
		{in: "30ms", wantErr: "want off or RTTms:LOSS%"},
		{in: "30ms:-1%", wantErr: "want off or RTTms:LOSS%"},
		{in: "30ms:100%", wantErr: "below 100"},
		{in: "20000ms:0%", wantErr: "above 10000"},
		{in: "", wantErr: "want off"},
	} {
		w, err := Parse(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if tc.off != (w == nil) {
			t.Errorf("Parse(%q) = %v, off want %v", tc.in, w, tc.off)
			continue
		}
		if w != nil && (w.RTT != tc.rtt || w.LossPct != tc.loss) {
			t.Errorf("Parse(%q) = %+v, want %v %v", tc.in, *w, tc.rtt, tc.loss)
		}
	}
	if w, _ := Parse("30ms:0.1%"); w.String() != "30ms:0.1%" {
		t.Errorf("String() = %q", w.String())
	}
}

// BENCH_WAN's grammar beyond TestParseWAN: spacing, case, precision, and
// what each form becomes for the impairment.
func TestParseWANGrammar(t *testing.T) {
	for in, want := range map[string]string{
		" 30ms:0.1% ":                  "WAN (30 ms RTT, 0.1 % loss)",
		"0.5ms:0.01%":                  "WAN (0.5 ms RTT, 0.01 % loss)",
		"100ms:0%":                     "WAN (100 ms RTT, no loss)",
		"10000ms:99.99%":               "WAN (10000 ms RTT, 99.99 % loss)",
		"0ms:0%:mtu=1280":              "WAN (0 ms RTT, no loss, MTU 1280)",
		"0ms:0%:mtu=1280:icmp=drop":    "WAN (0 ms RTT, no loss, MTU 1280, ICMP dropped)",
		"30ms:0.1%:icmp=send:mtu=1400": "WAN (30 ms RTT, 0.1 % loss, MTU 1400)",
	} {
		w, err := Parse(in)
		if err != nil || w == nil {
			t.Errorf("Parse(%q) = %v, %v", in, w, err)
			continue
		}
		if got := w.Condition(0).Label(); got != want {
			t.Errorf("Parse(%q) label %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{"OFF", "Off", " off\n"} {
		if w, err := Parse(in); w != nil || err != nil {
			t.Errorf("Parse(%q) = %v, %v; want off", in, w, err)
		}
	}
	for _, in := range []string{"30 ms:0.1%", "30ms: 0.1%", "30ms:0.1", "30:0.1%", "30ms:.1%", "30ms:1e-3%", "30s:0.1%",
		"30ms:0.1%:x", "ms:0.1%", "-30ms:0.1%", "on",
		"0ms:0%:mtu=1500", "0ms:0%:mtu=100", "0ms:0%:mtu=x", "0ms:0%:icmp=drop", "0ms:0%:mtu=1280:icmp=maybe",
		"0ms:0%:mtu=1280:mtu=1300"} {
		if w, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", in, w)
		}
	}
	w, _ := Parse("30ms:0.1%")
	c := w.Condition(7)
	if c.RTT != 30*time.Millisecond || c.OneWay() != 15*time.Millisecond || c.LossPct != 0.1 || c.Seed != 7 || c.QueueLimit() != 100000 {
		t.Errorf("Condition = %+v", c)
	}
}
