package report

import (
	"slices"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// chartPanel is one small chart: one condition, one quantity, one bar per
// transport.
type chartPanel struct {
	id         string // stable: the SVG group's id, "panel-" + id
	condition  string
	instrument string
	metric     string // "value" or "p50_us", as results.Cell names them
	title      string
	unit       string
	prec       int
	stacked    bool   // CPU-s by role: one stacked bar per transport
	relative   bool   // the values divided by the plain row's median
	probe      string // rrul's latency: only the transports probed so (probeOf); "" for all
}

// lanPanels and impairedPanels are the reference chart's panels: three of
// the LAN and its CPU split, and two for the impaired condition.
var (
	lanPanels = []chartPanel{
		{id: "lan-iperf3-1", condition: "lan", instrument: instIperf1, metric: "value", title: "iperf3, 1 stream", unit: "Gbit/s · higher is better", prec: precGbps},
		{id: "lan-scp", condition: "lan", instrument: instScp, metric: "value", title: "scp", unit: "MB/s · higher is better", prec: precMBps},
		{id: "lan-tcp_rr-p50", condition: "lan", instrument: instTCPRR, metric: "p50_us", title: "TCP_RR p50 latency", unit: "µs · lower is better", prec: precMicros},
	}
	lanCPUPanel = chartPanel{id: "lan-scp-cpu", condition: "lan", instrument: instScp, metric: "cpu", title: "scp CPU-s by role", unit: "CPU-s per run · lower is better", prec: precCPU, stacked: true}
	// An impaired condition's panels; id is suffixed to its name.
	impairedPanels = []chartPanel{
		{id: "iperf3-4", instrument: instIperf4, metric: "value", title: "iperf3, 4 streams", unit: "Gbit/s · higher is better", prec: precGbps},
		{id: "tcp_rr-p50", instrument: instTCPRR, metric: "p50_us", title: "TCP_RR p50 latency", unit: "µs · lower is better", prec: precMicros},
	}
)

// tunnelPanels are the tunnel comparison's (seed 002's view), drawn when
// the report has that section.
var tunnelPanels = []chartPanel{
	{id: "lan-iperf3-1-relative", condition: tunnelCondition, instrument: instIperf1, metric: "value", relative: true,
		title: "iperf3, 1 stream, relative to plain", unit: "× plain (no tunnel) · higher is better · whisker spans both rows", prec: precRatio},
	{id: "lan-iperf3-1-cpu-per-gb", condition: tunnelCondition, instrument: instIperf1, metric: results.HostCPUPerGB,
		title: "host CPU-s per GB (iperf3, 1 stream)", unit: "CPU-s per 10^9 bytes moved · lower is better", prec: precCPUPerGB},
}

// panelsFor lays out the panels in reading order, two per row: with one
// impaired condition, the reference chart's six (LAN iperf3, scp, TCP_RR;
// WAN iperf3 4 streams, or 1 stream when 4 did not run; LAN CPU; WAN
// TCP_RR); every further impaired
// condition adds its own pair, and a tunnel comparison its pair. A panel
// of a condition the run did not have, or of an instrument it did not
// run, is not drawn (a panel of an instrument that ran says "no data" for
// a transport it measured nothing through).
func panelsFor(v *view) []chartPanel {
	d := v.doc
	var lan bool
	var impaired []string
	for _, c := range d.Conditions {
		if c.Name == "lan" {
			lan = true
		} else {
			impaired = append(impaired, c.Name)
		}
	}
	ran := v.instrumentsRun()
	pair := func(cond string) []chartPanel {
		var ps []chartPanel
		for _, p := range impairedPanels {
			// Without iperf3's 4 streams, its 1 stream stands for the
			// condition's throughput, rather than no throughput panel.
			if p.instrument == instIperf4 && !ran[instIperf4] && ran[instIperf1] {
				p.id, p.instrument, p.title = "iperf3-1", instIperf1, "iperf3, 1 stream"
			}
			p.condition, p.id = cond, cond+"-"+p.id
			ps = append(ps, p)
		}
		return ps
	}
	var panels []chartPanel
	if lan {
		panels = append(panels, lanPanels...)
	}
	if len(impaired) > 0 {
		panels = append(panels, pair(impaired[0])[0])
	}
	if lan {
		panels = append(panels, lanCPUPanel)
	}
	if len(impaired) > 0 {
		panels = append(panels, pair(impaired[0])[1])
		for _, cond := range impaired[1:] {
			panels = append(panels, pair(cond)...)
		}
	}
	if _, ok := tunnelsOf(v); v.twnsbench && ok {
		panels = append(panels, tunnelPanels...)
	}
	return slices.DeleteFunc(panels, func(p chartPanel) bool { return !ran[p.instrument] })
}

// instrumentsRun are the instruments the run measured with: those it
// declared, or, in a document without declarations (the reference
// harness's), those with a sample.
func (v *view) instrumentsRun() map[string]bool {
	ran := map[string]bool{}
	for _, in := range v.doc.Instruments {
		ran[in.Name] = true
	}
	if len(ran) == 0 {
		for _, s := range v.doc.Samples {
			ran[s.Instrument] = true
		}
	}
	return ran
}
