package nsbench

import (
	"slices"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// costDoc is two builds of wireguard-go measured in 12 rounds of tcp_rr
// and iperf3-cost at equal speed, B's own CPU 10 % above A's (±1 %).
func costDoc() *results.Document {
	wobble := func(round int) float64 { return 1 + 0.01*float64(round%3-1) }
	own := func(b bool, round int, sec float64) map[string]float64 {
		if b {
			sec *= 1.10
		}
		return map[string]float64{"client": sec * wobble(round) / 2, "server": sec / 2}
	}
	var ins []results.Instrument
	for _, in := range []instrument.Instrument{instrument.TCPRR{}, instrument.IPerf3Cost{RateBps: instrument.DefaultCostRateBps}} {
		ins = append(ins, results.Instrument{Name: in.Name(), Metrics: in.Metrics()})
	}
	rr := abDoc("tcp_rr", ins[0].Metrics, 12, func(b bool, round int) results.Sample {
		return results.Sample{Value: 8000, TransportCPUSec: own(b, round, 1.2), Extra: map[string]float64{results.Transactions: 40000}}
	})
	cost := abDoc(instrument.CostName, ins[1].Metrics, 12, func(b bool, round int) results.Sample {
		moved := int64(125_000_000)
		return results.Sample{Value: 0.2, MovedBytes: &moved, TransportCPUSec: own(b, round, 0.3), Extra: map[string]float64{results.OfferedGbps: 0.2}}
	})
	rr.Instruments = ins
	rr.Samples = append(rr.Samples, cost.Samples...)
	return rr
}

// --fail-on selects the cost cells by their metric: B's 10 % more CPU per
// transaction and per GB at the fixed rate is slower there and sets the
// exit code, while the default (every cell's value: equal speeds) does
// not. A kernel tunnel has no own-CPU cells at all.
func TestFailOnSelectsCostCells(t *testing.T) {
	failOn, err := ParseFailOn("tcp_rr/" + results.TransportCPUPerTrans + "," + instrument.CostName + "/" + results.CostCPUPerGB)
	if err != nil {
		t.Fatal(err)
	}
	doc := costDoc()
	v := decideBuilds(doc, Builds{MinEffect: 0.05, MaxRounds: 20, FailOn: failOn})
	doc.Verdicts = v
	o, _ := VerdictOutcome(doc)
	var regressed []string
	for _, c := range o.Regressed {
		regressed = append(regressed, c.Instrument+"/"+c.Metric)
	}
	slices.Sort(regressed)
	want := []string{"iperf3-cost/" + results.CostCPUPerGB, "tcp_rr/" + results.TransportCPUPerTrans}
	if !slices.Equal(regressed, want) || o.Counted != 2 {
		t.Errorf("regressed %v of %d counted, want %v of 2", regressed, o.Counted, want)
	}
	for _, c := range v.Cells {
		if c.Metric == results.TransportCPUPerTrans || c.Metric == results.CostCPUPerGB {
			if c.Estimate.Ratio == nil || *c.Estimate.Ratio < 1.09 || *c.Estimate.Ratio > 1.11 || c.Estimate.MDE == nil {
				t.Errorf("%s/%s: B/A %v, MDE %v; want about 1.10 with an MDE", c.Instrument, c.Metric, c.Estimate.Ratio, c.Estimate.MDE)
			}
		}
	}

	doc = costDoc()
	doc.Verdicts = decideBuilds(doc, Builds{MinEffect: 0.05, MaxRounds: 20})
	if o, _ := VerdictOutcome(doc); len(o.Regressed) != 0 {
		t.Errorf("the default --fail-on (values) called %v slower", o.Regressed)
	}

	doc = costDoc()
	for i := range doc.Transports {
		doc.Transports[i].InKernel = "kernel WireGuard"
	}
	for _, c := range decideBuilds(doc, Builds{MinEffect: 0.05, MaxRounds: 20}).Cells {
		if results.OwnCPUMetric(c.Metric) {
			t.Errorf("a kernel tunnel has a cell of its own CPU: %s/%s", c.Instrument, c.Metric)
		}
	}
}

// A run states once, in its Environment, whether this host counts
// instructions and cycles, with the probe's reason when it does not
// (metrics.ProbeHardwareCounters is tested on fake event sources).
func TestDocumentStatesHardwareCounters(t *testing.T) {
	o := Defaults()
	o.OutDir, o.WAN = t.TempDir(), []string{"off"}
	p, err := NewPlan(o, []string{"ssh"})
	if err != nil {
		t.Fatal(err)
	}
	d := newDocument(p, nil)
	n := 0
	for _, f := range d.Env.Facts {
		if f.Key == HardwareCountersFact {
			n++
		}
	}
	want := metrics.ProbeHardwareCounters(metrics.EventSources).String()
	if got := d.Env.Facts.Get(HardwareCountersFact); n != 1 || got != want {
		t.Errorf("%d facts %q, want one: %q", n, got, want)
	}
}
