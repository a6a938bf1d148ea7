package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// writeHosts states, for a run across hosts, where each role ran and what
// each machine was: its kernel, CPU, NIC and the tools' versions there.
// The Environment's own CPU and kernel rows are the orchestrator's.
func (v *view) writeHosts(w *writer) {
	hs := v.doc.Env.HostsAcross()
	if len(hs) == 0 {
		return
	}
	w.block("### Hosts")
	var where []string
	for _, h := range hs {
		s := strings.Join(h.Roles, " and ") + " on " + orDash(h.Login)
		if h.Iface != "" {
			s += " (" + h.Iface + ")"
		}
		where = append(where, mdText(s))
	}
	w.block("Where each role ran: " + strings.Join(where, ", ") + ". The CPU and Host kernel rows above are those of the machine " +
		"that ran twnsbench; each row below was read on its host, the interface as the host keeps it (the run does not change it).")
	w.block(hostsTable(hs)...)
}

// hostsTable is one row per machine of a run across hosts: its roles and
// what was read there.
func hostsTable(hs []results.Host) []string {
	lines := []string{
		tableRow("Role", "Login", "Kernel", "CPU", "Cores", "Interface", "NIC driver", "Speed", "MTU", "Offloads", "Tools"),
		separatorRow(11),
	}
	for _, h := range hs {
		lines = append(lines, tableRow(orDash(strings.Join(h.Roles, ", ")), orDash(h.Login), orDash(h.Kernel), orDash(h.CPUModel),
			intOrDash(h.Cores), orDash(h.Iface), orDash(h.Driver), speedText(h.SpeedMbps), intOrDash(h.MTU), orDash(h.Offloads),
			toolsText(h.Tools)))
	}
	return lines
}

func orDash(s string) string {
	if s == "" {
		return dash
	}
	return s
}

// intOrDash: a count that was not read is absent (0), never shown as 0.
func intOrDash(n int) string {
	if n <= 0 {
		return dash
	}
	return strconv.Itoa(n)
}

// speedText is a link speed in the unit ethtool's users read it in.
func speedText(mbps int) string {
	switch {
	case mbps <= 0:
		return dash
	case mbps >= 1000:
		return strconv.FormatFloat(float64(mbps)/1000, 'f', -1, 64) + " Gbit/s"
	}
	return fmt.Sprintf("%d Mbit/s", mbps)
}

// toolsText lists each program's version line by program name, sorted:
// netperf and netserver print the same line.
func toolsText(tools map[string]string) string {
	if len(tools) == 0 {
		return dash
	}
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ": " + tools[n]
	}
	return strings.Join(parts, "; ")
}
