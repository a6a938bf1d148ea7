package report

import (
	"sort"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// notAttributed follows a dash that stands for work or memory a kernel
// tunnel holds outside any process: it exists, but not per transport.
const notAttributed = "‡"

func (v *view) writeMemory(w *writer) {
	w.block("## Memory footprint")
	if len(v.doc.RSS) == 0 {
		w.block("No peak-RSS samples were recorded.")
		return
	}
	w.block(v.memoryNote())
	if !v.twnsbench {
		lines := []string{"| Transport | Process | Peak RSS |", separatorRow(3)}
		for _, r := range v.doc.RSS {
			lines = append(lines, v.referenceRSSRows(r)...)
		}
		w.block(lines...)
		return
	}
	lines := []string{tableRow("Transport", "Role", "Peak RSS per process (VmHWM)", "All the transport's processes (cgroup memory.peak)"), separatorRow(4)}
	var kernel []string
	for _, r := range v.doc.RSS {
		m := splitRSS(r)
		label := r.Label
		if label == "" {
			label = v.label(r.Transport)
		}
		if m.inKernel != "" {
			lines = append(lines, tableRow(label, "kernel: "+m.inKernel, dash+" "+notAttributed, dash+" "+notAttributed))
			kernel = append(kernel, mdText(label+" ("+m.inKernel+")"))
		}
		for _, role := range m.roles() {
			procs := dash
			if ps := m.procs[role]; len(ps) > 0 {
				procs = strings.Join(ps, ", ")
			}
			cg := dash
			if kb, ok := m.cgroup[role]; ok {
				cg = mib(kb)
			}
			lines = append(lines, tableRow(label, role, procs, cg))
		}
	}
	w.block(lines...)
	if len(kernel) > 0 {
		w.block(notAttributed + " In the kernel, not attributable per transport: the tunnel state of " + joinAnd(kernel) +
			" (keys, SAs, queued packets) is kernel memory that no process or cgroup of the transport holds. " +
			"It is not 0, and it is not measured here.")
	}
}

// rssView is one memory entry split by measure and role.
type rssView struct {
	procs    map[string][]string // role → "process 12.3 MiB", sorted by process
	cgroup   map[string]int64    // role → memory.peak kB
	inKernel string
}

// roles are the roles either measure has, sorted.
func (m rssView) roles() []string {
	var rs []string
	for r := range m.procs {
		rs = append(rs, r)
	}
	for r := range m.cgroup {
		if _, ok := m.procs[r]; !ok {
			rs = append(rs, r)
		}
	}
	sort.Strings(rs)
	return rs
}

// splitRSS reads an entry by measure. Documents written before the
// measures had fields of their own kept memory.peak in PeakKB as "ROLE /
// all NAME processes (cgroup memory.peak)" and a kernel tunnel as
// "kernel (no userspace process)": 0; those are read as what they meant.
func splitRSS(r results.RSS) rssView {
	m := rssView{procs: map[string][]string{}, cgroup: map[string]int64{}, inKernel: r.InKernel}
	for role, kb := range r.CgroupPeakKB {
		m.cgroup[role] = kb
	}
	keys := make([]string, 0, len(r.PeakKB))
	for k := range r.PeakKB {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kb := r.PeakKB[k]
		role, process, _ := strings.Cut(k, " / ")
		switch {
		case strings.HasPrefix(k, "kernel (no userspace process)"):
			if m.inKernel == "" {
				m.inKernel = "kernel"
			}
		case strings.HasSuffix(k, " (cgroup memory.peak)"):
			m.cgroup[role] = kb
		default:
			m.procs[role] = append(m.procs[role], process+" "+mib(kb))
		}
	}
	return m
}

func mib(kb int64) string { return num(float64(kb)/1024, precMiB) + " MiB" }

// referenceRSSRows renders one rss entry of the reference harness's
// document as its report did, processes sorted by key so the map's order
// cannot change the report.
func (v *view) referenceRSSRows(r results.RSS) []string {
	label := r.Label
	if label == "" {
		label = v.label(r.Transport)
	}
	keys := make([]string, 0, len(r.PeakKB))
	for k := range r.PeakKB {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rows := make([]string, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, tableRow(label, k, mib(r.PeakKB[k])))
	}
	return rows
}
