package nsbench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
	"github.com/twnsbench/twnsbench/nsbench/verdict"
)

// TestBuildsScheduleABBA: the two builds of a transport are one paired
// block per condition, A first, beside the other rows' rounds; within it
// the order alternates A B, then B A, round after round.
func TestBuildsScheduleABBA(t *testing.T) {
	conds := []results.Condition{{Name: "lan"}, {Name: "wan"}}
	rows := rowsOf("ssh", "wireguard-go@new", "wireguard", "wireguard-go@old")
	bs, rs := schedule(OrderInterleaved, rows, conds, instrument.Default(), false)
	var got []string
	for _, b := range bs {
		got = append(got, fmt.Sprintf("%s:%v:%v", b.cond.Name, rowNames(b.rows), b.paired))
	}
	want := []string{
		"lan:[ssh wireguard]:false", "lan:[wireguard-go@new wireguard-go@old]:true",
		"wan:[ssh wireguard]:false", "wan:[wireguard-go@new wireguard-go@old]:true",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("blocks %v\nwant   %v", got, want)
	}
	if fmt.Sprint(namesOf(rs)) != "[[ssh wireguard] [wireguard-go@new wireguard-go@old]]" {
		t.Errorf("rounds recorded %v", namesOf(rs))
	}
	pair := bs[1].rows
	var order []string
	for run := 1; run <= 4; run++ {
		order = append(order, strings.Join(rowNames(runOrder(pair, run)), " "))
	}
	wantOrder := []string{"wireguard-go@new wireguard-go@old", "wireguard-go@old wireguard-go@new", "wireguard-go@new wireguard-go@old", "wireguard-go@old wireguard-go@new"}
	if !slices.Equal(order, wantOrder) {
		t.Errorf("round orders %q, want ABBA %q", order, wantOrder)
	}
}

// builtDoc is a document of two builds of wireguard-go measured in three
// rounds with rrul's censored latency and iperf3's goodput.
func builtDoc() *results.Document {
	d := &results.Document{
		Transports: []results.Transport{{Name: "ssh"}, {Name: "wireguard-go@a"}, {Name: "wireguard-go@b"}},
		Instruments: []results.Instrument{
			{Name: "iperf3-1", Metrics: []results.Metric{{Key: "value", Unit: "Gbit/s", Better: results.BetterHigher}, {Key: "retransmits"}}},
			{Name: "rrul", Metrics: []results.Metric{{Key: "value", Unit: "ms", Better: results.BetterLower, CensoredBy: results.CensoredWaitMs}}},
		},
	}
	add := func(row, in string, run int, v float64, censored bool) {
		s := results.Sample{Transport: row, Condition: "lan", Instrument: in, Run: run, Value: v, Extra: map[string]float64{"retransmits": 3}}
		if censored {
			s.Extra[results.CensoredWaitMs] = 900
		}
		d.Samples = append(d.Samples, s)
	}
	for run := 1; run <= 3; run++ {
		add("ssh", "iperf3-1", run, 9, false)
		add("wireguard-go@a", "iperf3-1", run, float64(run), false)
		if run != 2 { // B's round 2 failed: no pair
			add("wireguard-go@b", "iperf3-1", run, float64(10*run), false)
		}
		add("wireguard-go@a", "rrul", run, 5, false)
		add("wireguard-go@b", "rrul", run, 7, run == 3)
	}
	return d
}

// TestPairCells: a pair is one round's A and B samples of a cell; a
// round without both is no pair, a censored reading is flagged, and only
// metrics with a better direction are cells.
func TestPairCells(t *testing.T) {
	cells := pairCells(builtDoc(), buildPairs([]string{"ssh", "wireguard-go@a", "wireguard-go@b"}))
	var got []string
	for _, c := range cells {
		got = append(got, fmt.Sprintf("%s %s/%s/%s %s %v", c.Transport, c.Condition, c.Instrument, c.Metric, c.Better, c.Pairs))
	}
	want := []string{
		"wireguard-go lan/iperf3-1/value higher [{1 1 10 false false 0 0} {3 3 30 false false 0 0}]",
		"wireguard-go lan/rrul/value lower [{1 5 7 false false 0 0} {2 5 7 false false 0 0} {3 5 7 false true 0 0}]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("cells\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDecideBuildsAndOutcome: every paired cell gets a verdict naming A
// and B, with NaNs absent; --fail-on marks the cells that count, and the
// outcome reads the exit code's cases from them.
func TestDecideBuildsAndOutcome(t *testing.T) {
	fo, err := ParseFailOn("iperf3-1")
	if err != nil {
		t.Fatal(err)
	}
	doc := builtDoc()
	doc.Verdicts = decideBuilds(doc, Builds{MinEffect: 0.05, MaxRounds: 20, FailOn: fo})
	v := doc.Verdicts
	if v.Order != "ABBA" || v.MinEffect != 0.05 || fmt.Sprint(v.FailOn) != "[*/iperf3-1/value]" || len(v.Cells) != 2 {
		t.Fatalf("verdicts %+v", v)
	}
	for _, c := range v.Cells {
		if c.A != "wireguard-go@a" || c.B != "wireguard-go@b" || c.Transport != "wireguard-go" {
			t.Errorf("cell %+v: want A wireguard-go@a, B wireguard-go@b", c.VerdictCell)
		}
		if c.Counts != (c.Instrument == "iperf3-1") {
			t.Errorf("%s counts = %v", c.Instrument, c.Counts)
		}
		if c.Verdict == "" || c.Pairs == 0 {
			t.Errorf("cell %s without a verdict or pairs: %+v", c.Instrument, c)
		}
	}
	// Whatever Decide answers, Outcome sorts the counting cells by it.
	cell := func(k verdict.Kind, counts bool) results.Verdict {
		return results.Verdict{Verdict: string(k), Counts: counts}
	}
	for _, tc := range []struct {
		cells                      []results.Verdict
		regressed, undecided, seen int
	}{
		{[]results.Verdict{cell(verdict.NoChange, true), cell(verdict.Faster, true)}, 0, 0, 2},
		{[]results.Verdict{cell(verdict.Slower, true), cell(verdict.Undecided, true)}, 1, 1, 2},
		{[]results.Verdict{cell(verdict.Slower, false), cell(verdict.Undecided, true)}, 0, 1, 1},
		{[]results.Verdict{cell(verdict.Slower, false)}, 0, 0, 0},
	} {
		o, ok := VerdictOutcome(&results.Document{Verdicts: &results.Verdicts{Cells: tc.cells}})
		if !ok || len(o.Regressed) != tc.regressed || len(o.Undecided) != tc.undecided || o.Counted != tc.seen {
			t.Errorf("%v: outcome %d regressed, %d undecided, %d counted; want %d, %d, %d", tc.cells, len(o.Regressed), len(o.Undecided), o.Counted, tc.regressed, tc.undecided, tc.seen)
		}
	}
	// Each cell keeps what the CI files show beside its change, so they
	// render from the document alone: the medians of A's and B's readings.
	for _, c := range v.Cells {
		if c.Pairs == 0 {
			continue
		}
		as, bs := cellReadings(doc, c)
		if c.AMedian == nil || c.BMedian == nil || *c.AMedian != stats.Median(as) || *c.BMedian != stats.Median(bs) {
			t.Errorf("%s/%s: medians %v, %v; want %v, %v", c.Instrument, c.Metric, c.AMedian, c.BMedian, stats.Median(as), stats.Median(bs))
		}
	}
	if _, ok := VerdictOutcome(&results.Document{}); ok {
		t.Error("a document without builds has an outcome")
	}
}

func TestParseFailOn(t *testing.T) {
	got, err := ParseFailOn("iperf3-1, tcp_rr/p99_us,wan/*/value,all")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[*/iperf3-1/value */tcp_rr/p99_us wan/*/value */*/*]" {
		t.Errorf("ParseFailOn = %v", got)
	}
	for _, bad := range []string{"", " , ", "nope", "a/b/c/d", "iperf3-1/P99", "lan/iperf3-1/"} {
		if _, err := ParseFailOn(bad); err == nil || !strings.HasPrefix(err.Error(), "--fail-on") {
			t.Errorf("ParseFailOn(%q) = %v, want a --fail-on error", bad, err)
		}
	}
}

// TestPlanRefusesBadBuilds: the plan refuses what a run of builds cannot
// do, each with its flag.
func TestPlanRefusesBadBuilds(t *testing.T) {
	known := []string{"ssh", "wireguard-go"}
	base := func() Options {
		o := Defaults()
		o.OutDir = t.TempDir()
		o.Transports = []string{"wireguard-go@a", "wireguard-go@b"}
		return o
	}
	if _, err := NewPlan(base(), known); err != nil {
		t.Fatalf("a plan of builds refused: %v", err)
	}
	for _, tc := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Builds.MinEffect = -0.01 }, "--min-effect -1 %"},
		{func(o *Options) { o.Builds.MinEffect = 1 }, "--min-effect 100 %"},
		{func(o *Options) { o.Builds.MaxRounds = 2 }, "--max-rounds 2: want 3"},
		{func(o *Options) { o.RunsAuto, o.Runs = true, AutoMinRuns }, "--runs auto: not with builds"},
		{func(o *Options) { o.Order = OrderReference }, "--order reference: not with builds"},
		{func(o *Options) { o.Builds.FailOn = []FailOn{{"wan9", "*", "value"}} }, `no condition "wan9"`},
		{func(o *Options) {
			o.Builds.Profile = true
			o.Hosts.Inventory.Hosts = []hosts.Host{{Role: "server"}}
		}, "--profile: not with --host"},
	} {
		o := base()
		tc.change(&o)
		if _, err := NewPlan(o, known); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewPlan = %v, want %q", err, tc.want)
		}
	}
}

// TestMoreRounds: the rounds the verdict asks for, over the block's own
// cells, are capped by --max-rounds and added to the progress plan of
// both builds' every instrument.
func TestMoreRounds(t *testing.T) {
	var asked []verdict.Cell
	var askedDone, askedMax int
	planRounds = func(rs []verdict.Result, done, maxRounds int, _ verdict.Options) int {
		for _, r := range rs {
			asked = append(asked, r.Cell)
		}
		askedDone, askedMax = done, maxRounds
		return 5
	}
	t.Cleanup(func() { planRounds = verdict.Plan })
	doc := builtDoc()
	plan := &Plan{Options: Defaults()}
	plan.Builds.MaxRounds = 6
	ins, _, err := instrument.Select([]string{"iperf3-1", "rrul"})
	if err != nil {
		t.Fatal(err)
	}
	rows := rowsOf("wireguard-go@a", "wireguard-go@b")
	b := block{cond: results.Condition{Name: "lan"}, rows: rows, paired: true, instruments: ins}
	prog := newProgress(progressPlan{runs: 3, instruments: []string{"iperf3-1", "rrul"}, blocks: []progressBlock{{cond: "lan", transports: rowNames(rows)}}}, nil)
	c := &cellLoop{plan: plan, rec: newRecorder(doc, t.TempDir()), progress: prog, logf: func(string, ...any) {}}
	before := prog.total()
	if n := (&pairing{c: c, b: b}).moreRounds(3); n != 3 {
		t.Errorf("more rounds = %d, want 3 (asked 5, capped at --max-rounds 6 after 3)", n)
	}
	// The block's cells --fail-on selects (every value by default): not
	// iperf3-1's retransmits, which has no better direction here, nor
	// another block's.
	if askedDone != 3 || askedMax != 6 || len(asked) != 2 || asked[0].Metric != "value" || asked[1].Metric != "value" {
		t.Errorf("asked with done %d, max %d, cells %+v; want 3, 6 and the block's 2 values", askedDone, askedMax, asked)
	}
	if got := prog.total() - before; got != 3*2*2 {
		t.Errorf("progress plan grew by %d samples, want 3 rounds × 2 builds × 2 instruments", got)
	}
	asked = nil
	plan.Builds.FailOn = []FailOn{{"*", "rrul", "value"}}
	(&pairing{c: c, b: b}).moreRounds(3)
	if len(asked) != 1 || asked[0].Instrument != "rrul" {
		t.Errorf("with --fail-on rrul the plan saw %+v", asked)
	}
	plan.Builds.FailOn = nil
	// A block of other instruments (a counted block beside the speed
	// block of the same condition) plans on its own cells only, and
	// adds rounds to its own instruments' plan.
	asked = nil
	rrulOnly := block{cond: b.cond, rows: rows, paired: true, instruments: ins[1:]}
	before = prog.total()
	(&pairing{c: c, b: rrulOnly}).moreRounds(3)
	if len(asked) != 1 || asked[0].Instrument != "rrul" {
		t.Errorf("a block of rrul alone planned on %+v", asked)
	}
	if got := prog.total() - before; got != 3*2 {
		t.Errorf("a block of rrul alone grew the plan by %d samples, want 3 rounds × 2 builds", got)
	}
	// The ready samples are a plain block's cells, never a counted one's
	// (its paths take none).
	doc.Instruments = append(doc.Instruments, results.Instrument{Name: instrument.Ready, Metrics: []results.Metric{{Key: "value", Unit: "s", Better: results.BetterLower}}})
	for run := 1; run <= 3; run++ {
		doc.Samples = append(doc.Samples, results.Sample{Transport: "wireguard-go@a", Condition: "lan", Instrument: instrument.Ready, Run: run, Value: 1},
			results.Sample{Transport: "wireguard-go@b", Condition: "lan", Instrument: instrument.Ready, Run: run, Value: 1.1})
	}
	c.ready = true
	for _, tc := range []struct {
		b         block
		wantReady bool
	}{{rrulOnly, true}, {block{cond: b.cond, rows: rows, paired: true, instruments: ins[1:], counted: true}, false}} {
		asked = nil
		(&pairing{c: c, b: tc.b}).moreRounds(3)
		gotReady := slices.ContainsFunc(asked, func(cell verdict.Cell) bool { return cell.Instrument == instrument.Ready })
		if gotReady != tc.wantReady {
			t.Errorf("counted %v: planned on %+v, want the ready cell %v", tc.b.counted, asked, tc.wantReady)
		}
	}
	c.ready = false
	planRounds = func([]verdict.Result, int, int, verdict.Options) int { return 0 }
	if n := (&pairing{c: c, b: b}).moreRounds(3); n != 0 {
		t.Errorf("more rounds = %d when the verdict asks none", n)
	}
}

// TestPairCellsKeepOutNotConvergedRPM: a round in which either build's
// rpm test never converged is no pair of the two-builds verdict.
func TestPairCellsKeepOutNotConvergedRPM(t *testing.T) {
	d := &results.Document{
		Transports:  []results.Transport{{Name: "wireguard-go@a"}, {Name: "wireguard-go@b"}},
		Instruments: []results.Instrument{{Name: "rpm", Metrics: []results.Metric{{Key: "value", Unit: "RPM", Better: results.BetterHigher}}}},
	}
	for run := 1; run <= 3; run++ {
		for _, row := range []string{"wireguard-go@a", "wireguard-go@b"} {
			s := results.Sample{Transport: row, Condition: "lan", Instrument: "rpm", Run: run, Value: float64(1000 * run)}
			if row == "wireguard-go@b" && run == 2 {
				s.Value, s.Extra = 99999, map[string]float64{results.NotConverged: 1}
			}
			d.Samples = append(d.Samples, s)
		}
	}
	cells := pairCells(d, buildPairs([]string{"wireguard-go@a", "wireguard-go@b"}))
	if len(cells) != 1 || fmt.Sprint(cells[0].Pairs) != "[{1 1000 1000 false false 0 0} {3 3000 3000 false false 0 0}]" {
		t.Errorf("cells %+v: want rounds 1 and 3 only (B's round 2 never converged)", cells)
	}
}

// cellReadings are the A and B readings of c's metric in doc's samples,
// each build's in its own order.
func cellReadings(doc *results.Document, c results.Verdict) (as, bs []float64) {
	for _, s := range doc.Samples {
		if s.Condition != c.Condition || s.Instrument != c.Instrument {
			continue
		}
		r, ok := doc.ReadingOf(s, c.Metric)
		switch {
		case !ok:
		case s.Transport == c.A:
			as = append(as, r.Value)
		case s.Transport == c.B:
			bs = append(bs, r.Value)
		}
	}
	return as, bs
}

// freeShare: the CPU share the host's other work and steal left a sample,
// which the verdict adjusts for; 0 (unknown) without a reading, never
// below 1 % or above all of it.
func TestFreeShare(t *testing.T) {
	for _, c := range []struct {
		noise *results.Noise
		want  float64
	}{
		{nil, 0},
		{&results.Noise{BackgroundPct: 30, StealPct: 5}, 0.65},
		{&results.Noise{BackgroundPct: -2}, 1},     // a sum of processes' CPU a little below zero
		{&results.Noise{BackgroundPct: 120}, 0.01}, // more than the host, as read
	} {
		if got := freeShare(results.Sample{Noise: c.noise}); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%+v: %v, want %v", c.noise, got, c.want)
		}
	}
}

// TestDecideBuildsMinEffectPerMetric: without --min-effect a cell whose
// metric declares its own min effect (iperf3-instr's packet path) is
// decided and recorded with it, the others with the default, which the
// verdicts record as the run's; --min-effect applies to every cell.
func TestDecideBuildsMinEffectPerMetric(t *testing.T) {
	doc := &results.Document{
		Transports:  []results.Transport{{Name: "wireguard-go@a"}, {Name: "wireguard-go@b"}},
		Instruments: instrument.Declarations([]instrument.Instrument{instrument.IPerf3{Streams: 1}, instrument.DefaultInstr}, false),
	}
	for run := 1; run <= 12; run++ {
		// B: 3 % more instructions a byte, 3 % less goodput, every round.
		up := 1.025 + 0.001*float64(run)
		doc.Samples = append(doc.Samples,
			results.Sample{Transport: "wireguard-go@a", Condition: "lan", Instrument: instrument.InstrName, Run: run, Value: 8},
			results.Sample{Transport: "wireguard-go@b", Condition: "lan", Instrument: instrument.InstrName, Run: run, Value: 8 * up},
			results.Sample{Transport: "wireguard-go@a", Condition: "lan", Instrument: "iperf3-1", Run: run, Value: 2},
			results.Sample{Transport: "wireguard-go@b", Condition: "lan", Instrument: "iperf3-1", Run: run, Value: 2 / up})
	}
	cellOf := func(v *results.Verdicts, in string) results.Verdict {
		for _, c := range v.Cells {
			if c.Instrument == in && c.Metric == "value" {
				return c
			}
		}
		t.Fatalf("no %s cell in %+v", in, v.Cells)
		return results.Verdict{}
	}
	v := decideBuilds(doc, Builds{MaxRounds: 20})
	instr, speed := cellOf(v, instrument.InstrName), cellOf(v, "iperf3-1")
	if v.MinEffect != verdict.DefaultMinEffect || instr.MinEffect != instrument.InstrMinEffect || speed.MinEffect != verdict.DefaultMinEffect {
		t.Errorf("min effects: run %v, %s %v, iperf3-1 %v; want 5 %%, 2 %%, 5 %%", v.MinEffect, instrument.InstrName, instr.MinEffect, speed.MinEffect)
	}
	if instr.Verdict != string(verdict.Slower) || speed.Verdict != string(verdict.NoChange) {
		t.Errorf("verdicts: %s %s (%s), iperf3-1 %s (%s); want slower past its 2 %%, no change within 5 %%", instrument.InstrName, instr.Verdict, instr.Reason, speed.Verdict, speed.Reason)
	}
	v = decideBuilds(doc, Builds{MinEffect: 0.05, MaxRounds: 20})
	if instr := cellOf(v, instrument.InstrName); v.MinEffect != 0.05 || instr.MinEffect != 0.05 || instr.Verdict != string(verdict.NoChange) {
		t.Errorf("--min-effect 5 %%: run %v, %s %s at %v; want no change at 5 %%", v.MinEffect, instrument.InstrName, instr.Verdict, instr.MinEffect)
	}
}
