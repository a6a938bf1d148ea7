package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

type envRow struct{ item, value string }

// envRows lists the environment facts that were recorded, in the reference's
// order followed by twnsbench's additions. An empty field gets no row. The
// programs' versions and implementations are the facts the harness and the
// transports stated (Env.Facts), each under its own label, in their order.
func (v *view) envRows() []envRow {
	e := v.doc.Env
	rows := []envRow{
		{"CPU", cpuText(e)},
		{"Roles' CPUs", pinText(e.Pin)},
		{"Host kernel", e.Kernel},
		{"Docker", e.Docker},
		{"Container image", e.Image},
	}
	for _, f := range e.Facts {
		rows = append(rows, envRow{f.Label, f.Value})
	}
	rows = append(rows, []envRow{
		{"WAN emulation", e.WAN},
		{"NIC offloads", e.Offloads},
		{"scp form / options", scpFormText(e)},
		{"Runs per cell", runsText(e)},
		{"Order", orderText(e)},
		{"scp payload", payloadText(v.doc)},
		{"Congestion control", congestionText(e)},
		{"Impairment", e.Impairment},
		{"Loss seed", lossSeedText(e)},
		{"Topology", e.Topology},
		{"Harness", e.Harness},
		{"Sysctl changes (restored)", strings.Join(e.SysctlChanges, "; ")},
		{"Fallbacks used", strings.Join(e.Fallbacks, "; ")},
		{"Host before and after", driftText(v.doc.Config, v.doc.DriftProbes)},
	}...)
	out := rows[:0]
	for _, r := range rows {
		if r.value != "" {
			out = append(out, r)
		}
	}
	return out
}

func cpuText(e results.Env) string {
	if e.CPUsOnline != nil {
		s := fmt.Sprintf("%s online: %s", plural(e.CPUsOnline.Count, "CPU", "CPUs"), e.CPUsOnline.List)
		if a := e.Affinity; a != nil {
			s += fmt.Sprintf("; the run's affinity: %s", a.List)
		}
		if e.CPUModel != "" {
			s = e.CPUModel + " (" + s + ")"
		}
		return s
	}
	switch {
	case e.CPUModel != "" && e.Cores > 0:
		return fmt.Sprintf("%s (%d logical cores)", e.CPUModel, e.Cores)
	case e.Cores > 0:
		return fmt.Sprintf("%d logical cores", e.Cores)
	}
	return e.CPUModel
}

// pinText says which CPUs each role's processes were kept on (--pin),
// the roles that share CPUs together; "" when the scheduler placed them.
func pinText(p *results.Pin) string {
	if p == nil {
		return ""
	}
	var cpus []string
	byCPUs := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(p.Roles)) {
		c := p.Roles[name]
		if byCPUs[c] == nil {
			cpus = append(cpus, c)
		}
		byCPUs[c] = append(byCPUs[c], name)
	}
	var parts []string
	for _, c := range cpus {
		parts = append(parts, fmt.Sprintf("%s on CPU %s", joinAnd(byCPUs[c]), c))
	}
	return fmt.Sprintf("pinned (--pin %s): %s; every process a role started, its threads and children included", p.Layout, strings.Join(parts, "; "))
}

func scpFormText(e results.Env) string {
	if e.ScpOptions == "" {
		return e.ScpForm
	}
	return e.ScpForm + " · " + codeSpan(e.ScpOptions)
}

// runsText states the method: one untimed warm-up per cell, then the timed
// runs the cells summarise.
func runsText(e results.Env) string {
	if e.Runs <= 0 {
		return ""
	}
	if a := e.RunsAuto; a != nil {
		within := "±" + trimNum(100*a.Precision) + " % of the median"
		if a.PrecisionMs > 0 {
			within += " (a difference, rrul's latency increase, which can lie near 0: the wider of that and ±" + trimNum(a.PrecisionMs) + " ms)"
		}
		return fmt.Sprintf("auto: a pilot of %d timed runs per cell (after 1 warm-up) fixes the cell's n from its spread for a 95 %% interval within %s "+
			"(two-stage, at least %d more, at most %d in all), then every run counts; the time to ready is recorded once per path; cells show median (min–max; n)", e.Runs, within, stats.SecondStageMin, a.MaxRuns)
	}
	return fmt.Sprintf("%d timed (after 1 warm-up); cells show median (min–max)", e.Runs)
}

// lossSeedText says whether the WAN's loss positions can be repeated.
func lossSeedText(e results.Env) string {
	switch {
	case e.LossSeeded == nil:
		return ""
	case *e.LossSeeded && e.WANSeed != nil:
		return fmt.Sprintf("%d: every transport meets drops at the same packet positions; --seed %d repeats them", *e.WANSeed, *e.WANSeed)
	}
	return "unseeded: netem draws its own loss positions (its seed attribute, TCA_NETEM_PRNG_SEED, is not sent), so a rerun meets other drops"
}

// orderText says how the runs were laid out.
func orderText(e results.Env) string {
	switch e.Order {
	case "":
		return ""
	case "reference":
		return "reference: one transport after the other, all its runs under a condition before the next"
	}
	s := "interleaved: under each condition every transport's path is up together, and run k of every transport and " +
		"instrument is measured before run k+1 (warm-ups before the first), so a host that changes during the run meets every transport alike; " +
		"the transports' order rotates by one each run, so none is always measured first or always right after the same other one"
	if len(e.Rounds) > 1 {
		var rs []string
		for _, r := range e.Rounds {
			rs = append(rs, strings.Join(r, ", "))
		}
		s += fmt.Sprintf("; in %d rounds, because some paths hold the same addresses, ports or policies and cannot be up at once: [%s]",
			len(e.Rounds), strings.Join(rs, "], then ["))
	}
	return s
}

func congestionText(e results.Env) string {
	switch {
	case e.Congestion != "" && e.CongestionNote != "":
		return e.Congestion + " (" + e.CongestionNote + ")"
	case e.Congestion != "":
		return e.Congestion
	}
	return e.CongestionNote
}

// payloadText describes the scp payload per condition, as the reference
// does: the full-size random file where it was used, the smaller warm-up
// file elsewhere, and why. Conditions sharing a size are named together.
func payloadText(d *results.Document) string {
	groups, largest := payloadGroups(d.Conditions)
	if len(groups) == 0 {
		return ""
	}
	var parts, smaller []string
	for _, g := range groups {
		names := joinAnd(g.names)
		if g.bytes == largest {
			parts = append(parts, sizeLabel(g.bytes)+" of /dev/urandom on "+names)
			continue
		}
		parts = append(parts, "the "+sizeLabel(g.bytes)+" warm-up file on "+names)
		smaller = append(smaller, g.conditions...)
	}
	text := strings.Join(parts, ", ")
	if len(smaller) > 0 {
		text += " (" + smallerPayloadReason(d.Samples, smaller, largest) + ")"
	}
	return text + "; served from tmpfs, written to /dev/null"
}

// smallerPayloadReason says why the full payload was not used: the measured
// scp rate there (median over every transport's scp samples) makes it take
// too long. Without scp samples no rate is claimed.
func smallerPayloadReason(samples []results.Sample, conditions []string, largest int64) string {
	var rates []float64
	for _, s := range samples {
		if s.Instrument == instScp && slices.Contains(conditions, s.Condition) {
			rates = append(rates, s.Value)
		}
	}
	if sum := stats.Summarize(rates); sum.N > 0 {
		return fmt.Sprintf("TCP loss-bound ≈%s MB/s makes %s impractical", num(sum.Median, precMBps), sizeLabel(largest))
	}
	return sizeLabel(largest) + " would take too long there"
}

type payloadGroup struct {
	bytes      int64
	names      []string // display names, e.g. "LAN"
	conditions []string // condition names, e.g. "lan"
}

// payloadGroups groups the conditions by scp payload size in first-appearance
// order and returns the largest size.
func payloadGroups(conds []results.Condition) ([]payloadGroup, int64) {
	var groups []payloadGroup
	var largest int64
	index := map[int64]int{}
	for _, c := range conds {
		if c.ScpPayloadBytes <= 0 {
			continue
		}
		largest = max(largest, c.ScpPayloadBytes)
		i, ok := index[c.ScpPayloadBytes]
		if !ok {
			i = len(groups)
			index[c.ScpPayloadBytes] = i
			groups = append(groups, payloadGroup{bytes: c.ScpPayloadBytes})
		}
		groups[i].names = append(groups[i].names, strings.ToUpper(c.Name))
		groups[i].conditions = append(groups[i].conditions, c.Name)
	}
	return groups, largest
}

// driftText is the host's own figure before the first transport and after
// the last: iperf3, one stream, straight to the server. One probe each has
// no interval, so the change between them is not called drift: it says
// so, and that a change within the runs' own spread may be noise. A run
// asked not to probe (cfg.DriftProbe false) says so, with no figure.
func driftText(cfg *results.RunConfig, probes []results.DriftProbe) string {
	if cfg != nil && cfg.DriftProbe != nil && !*cfg.DriftProbe {
		return "not probed (--drift-probe=false)"
	}
	var start, end *results.DriftProbe
	for i, p := range probes {
		switch p.When {
		case "start":
			start = &probes[i]
		case "end":
			end = &probes[i]
		}
	}
	what := fmt.Sprintf("plain iperf3, 1 stream, %s s, no tunnel", num(firstWall(start, end), 0))
	switch {
	case start != nil && end != nil && start.Gbps > 0:
		return fmt.Sprintf("%s: %s Gbit/s before the first transport, %s after the last (%+.0f %%; one probe each, no interval: "+
			"a change within the runs' own spread may be noise, not a drift of the host)",
			what, num(start.Gbps, precGbps), num(end.Gbps, precGbps), 100*(end.Gbps/start.Gbps-1))
	case start != nil:
		return fmt.Sprintf("%s: %s Gbit/s before the first transport (no probe after the last: the run stopped early)", what, num(start.Gbps, precGbps))
	case end != nil:
		return fmt.Sprintf("%s: %s Gbit/s after the last transport (the first probe failed)", what, num(end.Gbps, precGbps))
	}
	return ""
}

func firstWall(ps ...*results.DriftProbe) float64 {
	for _, p := range ps {
		if p != nil {
			return p.WallSec
		}
	}
	return 0
}
