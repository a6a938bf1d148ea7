package compare

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
	if !strings.Contains(out.String(), "~ (p=1.000 q=1.000 n=3+3)") {
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
	// A pinned run against an unpinned one: tcp_rr's rate alone doubles.
	pinned := doc("6.18", 1, 1)
	pinned.Env.Pin = &results.Pin{Layout: "same", Roles: map[string]string{"client": "0", "server": "0"}}
	if d := EnvDiffs(a, pinned); len(d) != 1 || d[0] != `roles' cpus "off" vs "same: client 0, server 0"` {
		t.Errorf("pinned against unpinned: diffs = %q", d)
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

// TestManyCellsChanceAndCorrection: 60 cells measured twice from the same
// distributions (nothing changed). Some reach p < 0.05 by chance; the
// output says how many chance alone gives, and after the Benjamini–Hochberg
// adjustment none is called significant. Six cells that really moved by
// 20 % are still called significant beside them.
func TestManyCellsChanceAndCorrection(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 24))
	old, cur := &results.Document{}, &results.Document{}
	add := func(d *results.Document, tr string, scale float64) {
		for run := 1; run <= 8; run++ {
			d.Samples = append(d.Samples, results.Sample{Transport: tr, Condition: "lan", Instrument: "iperf3-1",
				Run: run, Value: scale * (3 + 0.1*rng.NormFloat64())})
		}
	}
	for i := range 60 {
		tr := fmt.Sprintf("t%02d", i)
		add(old, tr, 1)
		add(cur, tr, 1)
	}
	rows := Rows(old, cur)
	raw := 0
	for _, r := range rows {
		if r.P < Alpha {
			raw++
		}
		if r.Significant {
			t.Errorf("%s: unchanged, called significant (p %.4f, q %.4f)", r.Transport, r.P, r.Q)
		}
	}
	if raw == 0 {
		t.Fatal("no unchanged cell reached p < 0.05: the data do not exercise the correction")
	}
	var out bytes.Buffer
	if err := Write(&out, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"adjusted for all 60 rows by Benjamini–Hochberg", "about 3.0 of 60 rows would have p < 0.05",
		fmt.Sprintf("here %d do", raw), "significant when q < 0.05 (false discovery rate 5 %): 0 of 60"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for i := range 6 {
		tr := fmt.Sprintf("moved%d", i)
		add(old, tr, 1)
		add(cur, tr, 1.2)
	}
	for _, r := range Rows(old, cur) {
		if strings.HasPrefix(r.Transport, "moved") && !r.Significant {
			t.Errorf("%s: moved 20 %%, not significant (p %.4f, q %.4f)", r.Transport, r.P, r.Q)
		}
	}
}

// TestEnvDiffsSettings: a different instrument duration, warm-up, order or
// a condition's scp payload refuses the comparison like the kernel does;
// the reference's documents carry the reference's settings.
func TestEnvDiffsSettings(t *testing.T) {
	base := func() *results.Document {
		d := doc("6.18", 1, 1)
		d.SchemaVersion = results.SchemaVersion
		d.Env.DurationSec, d.Env.WarmupSec, d.Env.Order = 10, 2, "interleaved"
		d.Conditions = []results.Condition{{Name: "lan", ScpPayloadBytes: 5 << 30}, {Name: "wan", ScpPayloadBytes: 256 << 20}}
		return d
	}
	for _, tc := range []struct {
		change func(*results.Document)
		want   string
	}{
		{func(d *results.Document) { d.Env.DurationSec = 2 }, `duration "10s" vs "2s"`},
		{func(d *results.Document) { d.Env.WarmupSec = 0 }, `warm-up "2s" vs "0s"`},
		{func(d *results.Document) { d.Env.Order = "reference" }, `order "interleaved" vs "reference"`},
		{func(d *results.Document) { d.Conditions[1].ScpPayloadBytes = 64 << 20 }, `wan scp payload bytes "268435456" vs "67108864"`},
	} {
		cur := base()
		tc.change(cur)
		if diffs := EnvDiffs(base(), cur); len(diffs) != 1 || diffs[0] != tc.want {
			t.Errorf("diffs %q, want [%s]", diffs, tc.want)
		}
	}
	if d := EnvDiffs(base(), base()); len(d) != 0 {
		t.Errorf("identical: %q", d)
	}
	// The reference harness's document: 10 s, 2 s, one transport after
	// the other.
	ref := doc("6.18", 1, 1)
	ours := base()
	ours.Env.Order = "reference"
	ours.Conditions = nil
	if d := EnvDiffs(ref, ours); len(d) != 0 {
		t.Errorf("reference vs a reference-order run: %q", d)
	}
}

// TestFactDiffs: a differing implementation fact refuses the comparison;
// differing versions (a fact present on one side only included) are
// listed by ToolDiffs and do not. Neither names a fact of its own: the
// facts carry their labels and kind.
func TestFactDiffs(t *testing.T) {
	a, b := doc("6.18", 1, 1), doc("6.18", 1, 1)
	a.Env.Facts = results.Facts{{Key: "tw", Label: "tw", Value: "v3.0"}, {Key: "impl", Label: "Tunnel", Value: "kernel", Implementation: true}}
	b.Env.Facts = results.Facts{{Key: "tw", Label: "tw", Value: "v3.1"}, {Key: "impl", Label: "Tunnel", Value: "userspace"},
		{Key: "extra", Label: "Extra", Value: "1.0"}}
	if d := EnvDiffs(a, b); len(d) != 1 || d[0] != `Tunnel "kernel" vs "userspace"` {
		t.Errorf("EnvDiffs %q: want the implementation only", d)
	}
	if d := ToolDiffs(a, b); len(d) != 2 || d[0] != `tw "v3.0" vs "v3.1"` || d[1] != `Extra "" vs "1.0"` {
		t.Errorf("ToolDiffs %q: want the versions", d)
	}
	if d := append(EnvDiffs(a, a), ToolDiffs(b, b)...); len(d) != 0 {
		t.Errorf("identical facts differ: %q", d)
	}
}

// TestEnvDiffsScp: scp copied in another form (SFTP, the legacy protocol,
// ssh … cat), or a MB/s over the copy's own time against one over the
// whole wall (the reference's and older documents'), refuses the
// comparison: either alone turns the same copy "better". Documents where
// one side did not copy at all are not refused for it.
func TestEnvDiffsScp(t *testing.T) {
	scpDoc := func(form string, apart bool) *results.Document {
		d := doc("6.18", 1, 1)
		d.Env.ScpForm = form
		for run := 1; run <= 3; run++ {
			s := results.Sample{Transport: "ssh", Condition: "lan", Instrument: "scp", Run: run, Value: 400, WallSec: 14}
			if apart {
				s.Extra = map[string]float64{results.ScpConnectSec: 0.3, results.ScpTransferSec: 13.7}
			}
			d.Samples = append(d.Samples, s)
		}
		return d
	}
	if d := EnvDiffs(scpDoc("scp", true), scpDoc("scp", true)); len(d) != 0 {
		t.Errorf("same form and definition: %q", d)
	}
	for _, form := range []string{"scp -O", "ssh … cat"} {
		if d := EnvDiffs(scpDoc("scp", true), scpDoc(form, true)); len(d) != 1 || d[0] != fmt.Sprintf("scp form %q vs %q", "scp", form) {
			t.Errorf("form scp vs %s: %q", form, d)
		}
	}
	want := `scp MB/s "payload ÷ the whole wall, SSH connection included" vs "payload ÷ the copy's own time"`
	if d := EnvDiffs(scpDoc("scp", false), scpDoc("scp", true)); len(d) != 1 || d[0] != want {
		t.Errorf("whole wall vs copy time: %q, want [%s]", d, want)
	}
	noCopy := doc("6.18", 1, 1)
	if d := EnvDiffs(noCopy, scpDoc("scp -O", true)); len(d) != 0 {
		t.Errorf("one side without scp: %q", d)
	}
}

// TestRunsAdvice: the runs a change needs depend on how many rows the
// Benjamini–Hochberg adjustment spreads over. Over the 36 rows of a
// reference-sized comparison a lone change's q is 36·p, and 5 runs per
// side (smallest p 2/252 = 0.0079, q 0.29) cannot reach 0.05: it takes 7
// (2/3432 = 0.00058, q 0.021); 6 gives 2/924 = 0.0022, q 0.078.
func TestRunsAdvice(t *testing.T) {
	for _, tc := range []struct{ rows, want int }{{1, 4}, {2, 5}, {36, 7}, {60, 7}, {200, 8}} {
		if got := RunsToDetect(tc.rows); got != tc.want {
			t.Errorf("RunsToDetect(%d) = %d, want %d", tc.rows, got, tc.want)
		}
	}
	if p := SmallestP(3, 3); !(math.Abs(p-0.1) < 1e-12) {
		t.Errorf("SmallestP(3, 3) = %v, want 0.1", p)
	}
	if p := SmallestP(5, 4); math.Abs(p-2.0/126) > 1e-12 {
		t.Errorf("SmallestP(5, 4) = %v, want 2/126", p)
	}
	old, cur := &results.Document{}, &results.Document{}
	for i := range 36 {
		for run := 1; run <= 5; run++ {
			s := results.Sample{Transport: fmt.Sprintf("t%02d", i), Condition: "lan", Instrument: "iperf3-1", Run: run, Value: float64(run)}
			old.Samples = append(old.Samples, s)
			s.Value += 10 // every row moved, each alone at the smallest p
			cur.Samples = append(cur.Samples, s)
		}
	}
	var out bytes.Buffer
	if err := Write(&out, Rows(old, cur)); err != nil {
		t.Fatal(err)
	}
	want := "p < 0.05/36 = 0.0014; with 5+5 runs (the fewest here) the smallest possible p is 0.0079: use --runs 7 or more on both sides to detect a change among 36 rows."
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "--runs 5 or more") {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	Write(&out, Rows(old, cur)[:1])
	if want := "with 5+5 runs (the fewest here) the smallest possible p is 0.0079: enough."; !strings.Contains(out.String(), want) {
		t.Errorf("one row: output lacks %q:\n%s", want, out.String())
	}
	// Unequal sides: 3 old runs against 10 new reach 2/C(13, 3) = 0.007,
	// not three runs a side's 0.1; the row with the fewest is named.
	short := &results.Document{}
	for run := 1; run <= 3; run++ {
		short.Samples = append(short.Samples, results.Sample{Transport: "t00", Condition: "lan", Instrument: "iperf3-1", Run: run, Value: float64(run)})
	}
	for run := 1; run <= 10; run++ {
		short.Samples = append(short.Samples, results.Sample{Transport: "t01", Condition: "lan", Instrument: "iperf3-1", Run: run, Value: float64(run)})
	}
	long := &results.Document{}
	for _, tr := range []string{"t00", "t01"} {
		for run := 1; run <= 10; run++ {
			long.Samples = append(long.Samples, results.Sample{Transport: tr, Condition: "lan", Instrument: "iperf3-1", Run: run, Value: float64(run)})
		}
	}
	out.Reset()
	Write(&out, Rows(short, long))
	if want := "p < 0.05/2 = 0.025; with 3+10 runs (the fewest here) the smallest possible p is 0.007: enough."; !strings.Contains(out.String(), want) {
		t.Errorf("3 against 10: output lacks %q:\n%s", want, out.String())
	}
	if s := runsAdvice(nil); s != "" {
		t.Errorf("no rows: %q", s)
	}
}

// TestChangeFromZero: a significant change from a zero median (a loss
// that was 0 %) has no relative size: the verdict says which way it went,
// never "+NaN %", and the change column says n/a.
func TestChangeFromZero(t *testing.T) {
	lossDoc := func(vals ...float64) *results.Document {
		d := &results.Document{Instruments: []results.Instrument{{Name: "udp", Metrics: []results.Metric{
			{Key: "value", Unit: "%", Better: results.BetterLower}}}}}
		for i, v := range vals {
			d.Samples = append(d.Samples, results.Sample{Transport: "wireguard", Condition: "wan", Instrument: "udp", Run: i + 1, Value: v})
		}
		return d
	}
	rows := Rows(lossDoc(0, 0, 0, 0, 0), lossDoc(0.1, 0.2, 0.3, 0.2, 0.1))
	if len(rows) != 1 || !rows[0].Significant {
		t.Fatalf("rows %+v: want one significant row", rows)
	}
	if v := rows[0].Verdict(); v != "up from 0 worse" {
		t.Errorf("verdict %q, want %q", v, "up from 0 worse")
	}
	var out bytes.Buffer
	Write(&out, rows)
	if strings.Contains(out.String(), "NaN") || !strings.Contains(out.String(), " n/a ") {
		t.Errorf("output:\n%s", out.String())
	}
}

// rrulDoc is an rrul document: its loaded p50 per run, those in censored
// runs' (a probe outlasted the test) lower bounds; the idle p50 is 1 ms.
func rrulDoc(loaded []float64, censored ...int) *results.Document {
	d := &results.Document{Instruments: []results.Instrument{{Name: "rrul", Metrics: []results.Metric{
		{Key: "idle_p50_ms", Unit: "ms", Better: results.BetterLower},
		{Key: "loaded_p50_ms", Unit: "ms", Better: results.BetterLower, CensoredBy: results.CensoredWaitMs}}}}}
	for i, v := range loaded {
		extra := map[string]float64{"idle_p50_ms": 1 + float64(i)/100, "loaded_p50_ms": v}
		if slices.Contains(censored, i+1) {
			extra[results.CensoredWaitMs] = v
		}
		d.Samples = append(d.Samples, results.Sample{Transport: "tw", Condition: "wan", Instrument: "rrul", Run: i + 1, Value: v - 1, Extra: extra})
	}
	return d
}

// TestCensoredRowsAreNotTested: a row with a lower bound on either side
// gets no significance test, no change and no verdict of better or worse
// (a rank test and a ratio would take the bound for a value); its output
// says why, its bounded median reads "≥", and the correction counts only
// the rows tested. Before, the censored row was "+… % worse".
func TestCensoredRowsAreNotTested(t *testing.T) {
	old := rrulDoc([]float64{40, 41, 42, 43, 44})
	cur := rrulDoc([]float64{5000, 5100, 5200, 5300, 5400}, 1, 2, 3, 4, 5)
	rows := Rows(old, cur)
	if len(rows) != 2 || rows[0].Metric != "idle_p50_ms" || rows[1].Metric != "loaded_p50_ms" {
		t.Fatalf("rows %+v", rows)
	}
	r := rows[1]
	if r.Significant || !math.IsNaN(r.P) || !math.IsNaN(r.Q) || !math.IsNaN(r.ChangePct) || r.Verdict() != "not tested" ||
		r.Bounds.New.Runs != 5 || !r.Bounds.New.MedianBound || r.Bounds.Old.Runs != 0 {
		t.Errorf("censored row: %+v, verdict %q", r, r.Verdict())
	}
	if idle := rows[0]; math.IsNaN(idle.P) || idle.Q != idle.P || idle.Verdict() != "~" {
		t.Errorf("the exact row is tested alone (q = p with one row): %+v", idle)
	}
	var out bytes.Buffer
	if err := Write(&out, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"42.00  ≥ 5200  n/a     not tested (lower bounds: 0+5 runs censored n=5+5)",
		"q: p adjusted for all 1 rows",
		"≥, not tested: a censored run",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestEnvDiffsRRULProbes: rrul's ICMP figures measured alone and measured
// beside a TCP_RR flow (its own load), or TCP_RR read with another demo
// interval, are other measurements: the probe flows, as a transport's
// samples' methods name them, differ, and the comparison is refused. A
// side without rrul, or without the transport, is not refused for it.
func TestEnvDiffsRRULProbes(t *testing.T) {
	const alone = "latency by ICMP echo every 100 ms (ping -i 0.1), each probe's round trip"
	const beside = alone + "; beside it, at the same time, latency by netperf TCP_RR with interim results every 100 ms (-D -0.1, the clock read at every transaction) (its figures under tcp_rr_ keys)"
	rrulDoc := func(methods ...string) *results.Document {
		d := doc("6.18", 1, 1)
		for i, m := range methods {
			d.Samples = append(d.Samples, results.Sample{Transport: "ssh", Condition: "lan", Instrument: "rrul", Run: i + 1, Value: 3, Method: m})
		}
		return d
	}
	if d := EnvDiffs(rrulDoc(beside, beside), rrulDoc(beside)); len(d) != 0 {
		t.Errorf("same flows: %q", d)
	}
	if d := EnvDiffs(rrulDoc(alone), rrulDoc(beside)); len(d) != 1 || d[0] != fmt.Sprintf("rrul probes of ssh %q vs %q", alone, beside) {
		t.Errorf("ICMP alone vs beside TCP_RR: %q", d)
	}
	if d := EnvDiffs(doc("6.18", 1, 1), rrulDoc(beside)); len(d) != 0 {
		t.Errorf("one side without rrul: %q", d)
	}
	// A transport the other side did not probe (a rerun that left tw
	// out) is not compared.
	tw := rrulDoc(beside)
	tw.Samples = append(tw.Samples, results.Sample{Transport: "tw", Condition: "lan", Instrument: "rrul", Run: 1, Value: 9, Method: "latency by netperf TCP_RR"})
	if d := EnvDiffs(tw, rrulDoc(beside)); len(d) != 0 {
		t.Errorf("tw on one side only: %q", d)
	}
}
