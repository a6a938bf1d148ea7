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

// tunnelComparison is what the Tunnels section and its chart panels
// read of a run: the plain row, the rows compared (the transports with
// iperf3 1-stream samples that carry what they moved — documents from
// before moved_bytes have none — in report order) and the plain row's
// iperf3 1-stream median.
type tunnelComparison struct {
	plain string
	rows  []string
	base  float64
}

// tunnelsOf is v's tunnel comparison; false unless it has a plain row and
// at least one tunnel, both measured.
func tunnelsOf(v *view) (tunnelComparison, bool) {
	tc := tunnelComparison{plain: v.plainRow()}
	n := 0
	for _, t := range v.order {
		for _, s := range v.samples(t, tunnelCondition, instIperf1) {
			if s.MovedBytes != nil {
				tc.rows = append(tc.rows, t)
				if t != tc.plain {
					n++
				}
				break
			}
		}
	}
	if tc.plain == "" || n == 0 {
		return tc, false
	}
	plain := values(v.samples(tc.plain, tunnelCondition, instIperf1))
	if len(plain) == 0 {
		return tc, false
	}
	tc.base = stats.Summarize(plain).Median
	return tc, true
}

// writeTunnels renders the comparison: a row per transport of tc, its
// rate, in MBytes/s, relative to the plain row, and its CPU per GB.
func writeTunnels(w *writer, v *view) {
	tc, ok := tunnelsOf(v)
	if !v.twnsbench || !ok {
		return
	}
	plain, base := tc.plain, tc.base
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
	for _, t := range tc.rows {
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
