package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// recoveryDoc: three runs of a 5 s link flap under Pure SSH (the third not
// back within the 30 s bound), WireGuard (two of three not back, its
// stream not measured) and one run of a restart under tw, an instrument
// of another name whose samples carry the same figures.
func recoveryDoc() *results.Document {
	metrics := []results.Metric{
		{Key: "value", Unit: "s", CensoredBy: results.AtLeastKey("value")},
		{Key: results.RecoveryLost}, {Key: results.RecoveryDials}, {Key: results.SessionSurvived},
		{Key: results.StreamResumed}, {Key: results.StreamGapSec, CensoredBy: results.AtLeastKey(results.StreamGapSec)},
	}
	s := func(tr, in string, run int, value float64, extra map[string]float64) results.Sample {
		return results.Sample{Transport: tr, Condition: "lan", Instrument: in, Run: run, Value: value, Unit: "s", Extra: extra}
	}
	noStream := func(x map[string]float64) results.Sample {
		smp := s("wireguard", "flap-5s", int(x["run"]), x["value"], x)
		delete(smp.Extra, "run")
		delete(smp.Extra, "value")
		smp.Method = "the TCP stream beside the prober not measured: it carried no byte before the fault"
		return smp
	}
	return &results.Document{
		SchemaVersion: results.SchemaVersion,
		Env:           results.Env{Runs: 3},
		Instruments: []results.Instrument{{Name: "flap-5s", Metrics: metrics}, {Name: "restart-server", Metrics: metrics},
			{Name: "tcp_rr", Metrics: []results.Metric{{Key: "value"}}}},
		Transports: []results.Transport{{Name: "ssh", Label: "Pure SSH"}, {Name: "wireguard", Label: "SSH over WireGuard"}, {Name: "tw", Label: "SSH over tw"}},
		Conditions: []results.Condition{{Name: "lan", Label: "LAN"}},
		Samples: []results.Sample{
			s("ssh", "flap-5s", 1, 0.05, map[string]float64{"lost": 510, "dials": 1, "session_survived": 1, "stream_resumed": 1, "stream_gap_s": 5.2}),
			s("ssh", "flap-5s", 2, 0.07, map[string]float64{"lost": 530, "dials": 2, "session_survived": 1, "stream_resumed": 1, "stream_gap_s": 6.4}),
			s("ssh", "flap-5s", 3, 30, map[string]float64{"value_at_least": 1, "lost": 3500, "dials": 12, "session_survived": 0,
				"stream_resumed": 0, "stream_gap_s": 35.1, "stream_gap_s_at_least": 1}),
			noStream(map[string]float64{"run": 1, "value": 0.09, "lost": 520, "dials": 2, "session_survived": 1}),
			noStream(map[string]float64{"run": 2, "value": 30, "value_at_least": 1, "lost": 3500, "dials": 11, "session_survived": 0}),
			noStream(map[string]float64{"run": 3, "value": 30, "value_at_least": 1, "lost": 3500, "dials": 10, "session_survived": 0}),
			s("tw", "restart-server", 1, 1.2345, map[string]float64{"lost": 130, "dials": 3, "session_survived": 0}),
			s("ssh", "tcp_rr", 1, 20000, nil),
		},
	}
}

// TestRecoverySection: one row per condition × transport × fault
// instrument, whatever the instrument's name; a run not back within the
// bound makes every figure it reaches "≥" (the median too when it is at
// or below it) and is counted; survival and resumption are exact counts;
// a stream not measured is a dash with its reason.
func TestRecoverySection(t *testing.T) {
	md := string(Markdown(recoveryDoc()))
	for _, want := range []string{
		"## Recovery",
		"| Condition | Transport | Fault | Recovery (s) | Requests lost | Connections opened | SSH session | Stream resumed | Stream without bytes (s) |",
		// One censored run above the median: the median is exact, the
		// interval's top a bound.
		"| lan | Pure SSH | `flap-5s` | 0.070 (0.050–≥ 30.000, 75 %; 1 of 3 not back within 30 s) | 530 (510–≥ 3500) | 2 (1–12) | 2 of 3 survived | 2 of 3 resumed | 6.40 (5.20–≥ 35.10) |",
		// Two of three: the median is the bound itself.
		"| lan | SSH over WireGuard | `flap-5s` | ≥ 30.000 (0.090–≥ 30.000, 75 %; 2 of 3 not back within 30 s) | ≥ 3500 (520–≥ 3500) | 10 (2–11) | 1 of 3 survived | — | — |",
		"| lan | SSH over tw | `restart-server` | 1.234 (1.234–1.234, 0 %; n=1) | 130 (130–130; n=1) | 3 (3–3; n=1) | 0 of 1 survived | — | — |",
		"- SSH over WireGuard, `flap-5s`, runs 1, 2 and 3: the TCP stream beside the prober not measured: it carried no byte before the fault.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "| lan | Pure SSH | flap-5s |") || strings.Contains(md, "| lan | SSH over tw | restart-server |") {
		t.Error("the recovery figures are in More metrics as well, without their bounds")
	}
	if !strings.Contains(string(HTML(recoveryDoc())), "<td>2 of 3 survived</td>") {
		t.Error("the HTML page lacks the Recovery table")
	}
	if md := string(Markdown(rrulDoc())); strings.Contains(md, "## Recovery") {
		t.Error("a run without a fault instrument has a Recovery section")
	}
}

// TestRecoveryIntervalIsTheJSONs: the table's interval is the one the
// JSON's cells hold (ci_low–ci_high), with the same lower bounds.
func TestRecoveryIntervalIsTheJSONs(t *testing.T) {
	d := recoveryDoc()
	for _, c := range results.Cells(d) {
		if c.Transport != "ssh" || c.Instrument != "flap-5s" || c.Metric != "value" {
			continue
		}
		if c.Median != 0.07 || c.CILow != 0.05 || c.CIHigh != 30 || c.CILevel != 0.75 || c.Censored != 1 ||
			!slices.Contains(c.LowerBounds, results.BoundCIHigh) || c.MedianAtLeast() {
			t.Errorf("JSON cell %+v, want median 0.07 exact, interval 0.05–≥30 at 75 %%, one censored", c)
		}
		return
	}
	t.Fatal("no JSON cell for Pure SSH's flap-5s value")
}
