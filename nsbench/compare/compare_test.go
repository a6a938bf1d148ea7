package compare

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

func doc(kernel string, scale float64, vals ...float64) *results.Document {
	d := &results.Document{Env: results.Env{Kernel: kernel, Congestion: "cubic", SizeGB: 5}}
	for i, v := range vals {
		p50 := 30 * scale
		d.Samples = append(d.Samples,
			results.Sample{Transport: "ssh", Condition: "lan", Instrument: "iperf3-1", Run: i + 1, Value: v * scale},
			results.Sample{Transport: "ssh", Condition: "lan", Instrument: "tcp_rr", Run: i + 1, Value: 1000 + v, P50Us: &p50})
	}
	return d
}

func TestIdenticalInputsAreAllTilde(t *testing.T) {
	a := doc("6.18", 1, 3.63, 3.64, 3.65)
	rows := Rows(a, a)
	if len(rows) != 3 {
		t.Fatalf("rows = %d, want 3 (iperf3-1 value, tcp_rr value, tcp_rr p50)", len(rows))
	}
	for _, r := range rows {
		if r.Verdict() != "~" || r.ChangePct != 0 {
			t.Errorf("%+v: want ~ and 0 %%", r)
		}
	}
	var out bytes.Buffer
	if err := Write(&out, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "~ (p=1.000 n=3+3)") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestClearShiftIsSignificant(t *testing.T) {
	old := doc("6.18", 1, 3.60, 3.62, 3.64, 3.66, 3.68)
	cur := doc("6.18", 1.5, 3.60, 3.62, 3.64, 3.66, 3.68)
	rows := Rows(old, cur)
	r := rows[0]
	if !r.Significant || r.P >= Alpha || r.Verdict() != "+50.0 %" {
		t.Errorf("50 %% faster in every run: %+v verdict %q", r, r.Verdict())
	}
	// Three runs each can never reach p < 0.05, however large the shift.
	few := Rows(doc("6.18", 1, 1, 2, 3), doc("6.18", 10, 1, 2, 3))
	if few[0].Significant || few[0].P < 0.1-1e-9 {
		t.Errorf("3 vs 3: %+v", few[0])
	}
}

func TestEnvDiffs(t *testing.T) {
	a, b := doc("6.18", 1, 1), doc("6.1", 1, 1)
	b.Env.Congestion = "bbr"
	diffs := EnvDiffs(a, b)
	if len(diffs) != 2 || !strings.Contains(diffs[0], `kernel "6.18" vs "6.1"`) || !strings.Contains(diffs[1], "congestion") {
		t.Errorf("diffs = %q", diffs)
	}
	if d := EnvDiffs(a, a); len(d) != 0 {
		t.Errorf("identical envs differ: %q", d)
	}
}

// TestDeclaredMetricsAndDirection: with declarations, compare covers every
// declared metric (extras included), shows their units, and says whether a
// significant change is better or worse.
func TestDeclaredMetricsAndDirection(t *testing.T) {
	declare := func(d *results.Document) *results.Document {
		d.Instruments = []results.Instrument{
			{Name: "iperf3-1", Metrics: []results.Metric{{Key: "value", Unit: "Gbit/s", Better: results.BetterHigher}}},
			{Name: "tcp_rr", Metrics: []results.Metric{{Key: "value", Unit: "trans/s", Better: results.BetterHigher},
				{Key: "p50_us", Unit: "µs", Better: results.BetterLower}, {Key: "lost", Unit: "%", Better: results.BetterLower}}},
		}
		for i := range d.Samples {
			if d.Samples[i].Instrument == "tcp_rr" {
				d.Samples[i].Extra = map[string]float64{"lost": 0.1}
			}
		}
		return d
	}
	old := declare(doc("6.18", 1, 3.60, 3.62, 3.64, 3.66, 3.68))
	cur := declare(doc("6.18", 1.5, 3.60, 3.62, 3.64, 3.66, 3.68))
	rows := Rows(old, cur)
	got := map[string]Row{}
	for _, r := range rows {
		got[r.Instrument+" "+r.Metric] = r
	}
	if len(rows) != 4 || got["tcp_rr lost"].Unit != "%" {
		t.Fatalf("rows %+v: want the 4 declared metrics, the extra included", rows)
	}
	if v := got["iperf3-1 value"].Verdict(); v != "+50.0 % better" {
		t.Errorf("faster goodput: %q", v)
	}
	if v := got["tcp_rr p50_us"].Verdict(); v != "+50.0 % worse" {
		t.Errorf("higher latency: %q", v)
	}
	var out bytes.Buffer
	Write(&out, rows)
	if !strings.Contains(out.String(), " µs ") || !strings.Contains(out.String(), "unit") {
		t.Errorf("output lacks units:\n%s", out.String())
	}
}
