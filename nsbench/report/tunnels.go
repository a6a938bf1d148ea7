package report

import (
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// The tunnel comparison is seed 002's view of a run: one stream of iperf3
// on the LAN per transport, in iperf3 -fM's MBytes/s as well, set against
// the plain network, with what each GB cost in CPU.
const (
	tunnelCondition = "lan"
	mebibyte        = 1 << 20 // iperf3 -fM's MByte
	precRatio       = 3
	precCPUPerGB    = 2
)

// plainRow is the transport the document marks as the path without a
// tunnel, or "".
func (v *view) plainRow() string {
	for _, t := range v.doc.Transports {
		if t.Plain {
			return t.Name
		}
	}
	return ""
}

// tunnelRows are the transports with iperf3 1-stream samples that carry
// what they moved (documents from before moved_bytes have none): the rows
// of the comparison, in report order.
func (v *view) tunnelRows() []string {
	var rows []string
	for _, t := range v.order {
		for _, s := range v.samples(t, tunnelCondition, instIperf1) {
			if s.MovedBytes != nil {
				rows = append(rows, t)
				break
			}
		}
	}
	return rows
}

// hasTunnelComparison: a plain row and at least one tunnel, both measured.
func (v *view) hasTunnelComparison() bool {
	plain, n := v.plainRow(), 0
	for _, t := range v.tunnelRows() {
		if t != plain {
			n++
		}
	}
	return plain != "" && n > 0 && len(v.samples(plain, tunnelCondition, instIperf1)) > 0
}

// plainMedian is the plain row's iperf3 1-stream median, 0 without one.
func (v *view) plainMedian() float64 {
	plain := v.plainRow()
	if plain == "" {
		return 0
	}
	return stats.Summarize(values(v.samples(plain, tunnelCondition, instIperf1))).Median
}

func (v *view) writeTunnels(w *writer) {
	if !v.twnsbench || !v.hasTunnelComparison() {
		return
	}
	plain := v.plainRow()
	base := v.plainMedian()
	w.block("## Tunnels compared — " + mdText(v.conditionLabel(tunnelCondition)))
	w.block("Seed 002's view: iperf3 with one stream per transport, also in MBytes/s as `iperf3 -fM` counts them " +
		"(2^20 bytes, the seed's unit), and relative to the plain network: the " + mdText(v.label(plain)) + " row, whose " +
		"iperf3 crosses no tunnel. CPU-s per GB: the CPU-seconds spent during the sample per 10^9 bytes iperf3 moved, " +
		"of the whole host (every process and the kernel: both iperf3 ends, the tunnel, kernel crypto) and of the " +
		"transport's own processes (its cgroups: a dash where there is no tunnel, or the tunnel is the kernel's). " +
		"Medians of the runs, (min–max).")
	runs := v.fullRuns()
	lines := []string{tableRow("Transport", "iperf3 1 stream (Gbit/s)", "MBytes/s", "relative to plain",
		"host CPU-s per GB", "tunnel's own CPU-s per GB"), separatorRow(6)}
	var kernel []string
	for _, t := range v.tunnelRows() {
		ss := v.samples(t, tunnelCondition, instIperf1)
		gbps := values(ss)
		mbytes := make([]float64, len(gbps))
		for i, g := range gbps {
			mbytes[i] = g * 1e9 / 8 / mebibyte
		}
		label, rel := v.label(t), dash
		if t == plain {
			label += " (no tunnel: the baseline)"
		}
		if base > 0 {
			rel = num(stats.Summarize(gbps).Median/base, precRatio) + "×"
		}
		own := dash
		entry, _ := v.doc.TransportOf(t)
		switch {
		case entry.InKernel != "":
			own += " " + notAttributed
			kernel = append(kernel, mdText(v.label(t)+" ("+entry.InKernel+")"))
		case t != plain:
			own = rangeCell(metricValues(ss, results.TransportCPUPerGB), precCPUPerGB, runs)
		}
		lines = append(lines, tableRow(label,
			rangeCell(gbps, precGbps, runs),
			rangeCell(mbytes, precMBps, runs),
			rel,
			rangeCell(metricValues(ss, results.HostCPUPerGB), precCPUPerGB, runs),
			own))
	}
	w.block(lines...)
	if len(kernel) > 0 {
		w.block(notAttributed + " In the kernel, not attributable per transport — see host CPU: the tunnel's work of " +
			joinAnd(kernel) + " runs in the kernel's softirq and worker threads, which belong to no process or cgroup of " +
			"the transport; its cost is inside the host CPU-s per GB.")
	}
}

// noFigureNote is what a chart's bar says instead of a figure the
// transport cannot have, as the comparison's dash does: its own CPU where
// there is no tunnel or the tunnel is the kernel's, whatever the samples
// hold (documents written before transport_cpu_absent carried a 0).
func (v *view) noFigureNote(transport, metric string) string {
	if !results.OwnCPUMetric(metric) {
		return ""
	}
	switch t, _ := v.doc.TransportOf(transport); {
	case t.Plain:
		return "no tunnel"
	case t.InKernel != "":
		return "not attributable"
	}
	return ""
}

// conditionLabel is a condition's label, or its name.
func (v *view) conditionLabel(name string) string {
	for _, c := range v.doc.Conditions {
		if c.Name == name && c.Label != "" {
			return c.Label
		}
	}
	return name
}
