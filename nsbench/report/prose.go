package report

import (
	"fmt"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// The report's prose. A document of the reference (Docker) harness gets the
// reference report's own sentences, so that rendering it reproduces that
// report; a twnsbench document gets sentences about namespaces on one host
// or on the hosts named for the roles.

func (v *view) title() string {
	if !v.twnsbench {
		return "Tunnel Whisperer throughput & footprint benchmark"
	}
	return "twnsbench: throughput & footprint benchmark"
}

func (v *view) intro() string {
	if !v.twnsbench {
		return "Three transports, same workload: the client pulls data from the server over plain SSH, " +
			"over SSH inside a direct kernel-WireGuard link, and over SSH inside the real Tunnel Whisperer path " +
			"(`tw client connect` → VLESS/XHTTP/mTLS :443 → relay Caddy + Xray → reverse SSH → `tw serve` → sshd). " +
			"Every instrument moves bytes server → client."
	}
	labels := make([]string, len(v.order))
	for i, t := range v.order {
		labels[i] = mdText(v.label(t))
	}
	where := "with client, relay and server in their own Linux network namespaces on one host"
	if v.doc.Env.AcrossHosts() {
		// Across hosts the Hosts table says which role ran where.
		where = "with each role in its own Linux network namespace on the host named for it (Hosts, below)"
	}
	return "Same workload for every transport: the client pulls data from the server over each transport (" +
		joinAnd(labels) + "), " + where + ". Every instrument moves bytes server → client."
}

func (v *view) memoryNote() string {
	if !v.twnsbench {
		return "Peak resident set (VmHWM) of the transport processes. The baseline rows are idle listeners " +
			"sampled after the SSH transport's runs (the first transport) closed their connections; VmHWM is a " +
			"since-start high-water mark, so a higher peak reached later by these shared listeners is not captured. " +
			"The tw and WireGuard rows are transfer-time peaks sampled at the end of that transport's own runs. " +
			"WireGuard has no userspace process: its footprint is kernel memory, reported as 0."
	}
	return "Two measures, each in its own column, never added together. Peak RSS per process: the peak resident " +
		"set (VmHWM, from /proc/PID/status) of each of the transport's processes, sampled once per transport at the " +
		"end of its own runs. VmHWM is a since-start high-water mark: for a process shared by several transports (the " +
		"idle baseline listeners), it is the highest peak up to the moment it was sampled, and a higher peak reached " +
		"later is not captured. cgroup memory.peak: the highest memory charged to the transport's cgroup in that role " +
		"— all its processes together, forked children included, with the kernel memory charged to them (socket " +
		"buffers, page cache) — where the host delegates the memory controller; a dash where it does not."
}

func (v *view) diagnosticsNote() string {
	if !v.twnsbench {
		return "Raw tc/wg state captured per WAN cell, so a result can be reconciled against the qdisc's own " +
			"drop/overlimit counters (and, for WireGuard, wg0's MTU and transfer stats) instead of taken on faith."
	}
	if v.doc.Env.ImpairmentMethod == "userspace" {
		return "Raw state captured per WAN cell, so a result can be reconciled against counters instead of taken on faith: " +
			"the userspace impairment's own counters per impaired direction (what it sent on, dropped as emulated loss or " +
			"at its queue limit, held, and lost outside the emulation) with the drop ratio, in the shape of netem's " +
			"statistics; for WireGuard the device's MTU and transfer counters."
	}
	return "Raw kernel state captured per cell (netem's sent/dropped counters with the drop ratio; for WireGuard " +
		"the device's MTU and transfer counters), so a result can be reconciled against the kernel's own counters " +
		"instead of taken on faith."
}

func (v *view) readingBullets() []string {
	if !v.twnsbench {
		return []string{
			"**Pure SSH** is the ceiling: one OpenSSH connection straight across the Compose bridge.",
			"**WireGuard** is a direct peer-to-peer link (mesh-style): one hop fewer than tw, encryption in the kernel — its CPU shows up only in the host-wide CPU-seconds, never in a container's cgroup.",
			"**Tunnel Whisperer** is the real product path through the relay. For scp that is SSH inside tw's own end-to-end SSH inside TLS; the iperf3 rows have no inner OpenSSH and are tw's own ceiling.",
			"LAN cells measure encryption/framing cost only (~0 RTT). WAN cells add netem delay and loss on both ends; that is where TCP-over-TLS-over-TCP and UDP diverge.",
			"Gbit/s per busy core = iperf3 1-stream goodput ÷ average host cores busy during the run.",
		}
	}
	var b []string
	// Each measured transport in the words it describes itself with.
	for _, t := range v.doc.Transports {
		if t.About != "" && v.measured(t.Name) {
			b = append(b, "**"+mdText(v.label(t.Name))+"** "+mdText(t.About))
		}
	}
	if c := v.conditionsBullet(); c != "" {
		b = append(b, c)
	}
	nNote := "`n=K` in a range marks a cell built from fewer runs than configured."
	if v.doc.Env.RunsAuto != nil {
		nNote = "`n=K` in a range is the cell's number of valid runs: under --runs auto each cell's pilot fixes its own."
	}
	b = append(b,
		"Gbit/s per busy core = iperf3 1-stream goodput ÷ average host cores busy during the run (host-wide busy CPU-seconds from /proc/stat ÷ wall time), per run, then the median.",
		"— marks a value that was not measured (the transport was skipped, or its instrument gave no sample); no cell is estimated. "+nNote,
	)
	if v.doc.ScpTimesCopyApart() {
		b = append(b, "scp MB/s = payload ÷ the copy's own time, from ssh's request for the copy (its -v line \"Sending subsystem\" or \"Sending command\") to scp's exit. "+
			"The SSH connection before it (TCP, key exchange, authentication, the session channel) is its own figure, \"SSH connection set-up\" under More metrics; \"scp wall\" is both.")
	}
	b = append(b, ciMethodText())
	if r := v.doc.Env.Runs; r > 0 && r < 6 {
		b = append(b, fmt.Sprintf("With %d runs per cell the median has no bounded 95 %% confidence interval (that needs at least 6); read differences smaller than the min–max spread as noise.", r))
	}
	return b
}

// ciMethodText says how the cells' intervals are made, with an example
// of an asymmetric one computed by stats.MedianCI itself, so the words
// cannot drift from the method.
func ciMethodText() string {
	const n = 8
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(i + 1) // the k-th smallest run is k
	}
	ci := stats.MedianCI(xs, 0.95)
	return fmt.Sprintf("Intervals of the median (the charts' whiskers; ci_low–ci_high in the JSON) are distribution-free, from order statistics (benchstat's method): "+
		"the narrowest pair of runs whose exact binomial coverage reaches 95 %%, grown from the middle out, so not always symmetric "+
		"(with %d runs, the %s and %s smallest: %s %%). With fewer than %d runs none reaches 95 %%: the interval is the min–max range, at its real level.",
		n, ordinal(int(ci.Low)), ordinal(int(ci.High)), pct(ci.Level), stats.MinSamplesFor(0.95))
}

// ordinal writes 1 as "1st", 7 as "7th".
func ordinal(k int) string {
	switch {
	case k%100/10 == 1:
		return fmt.Sprintf("%dth", k)
	case k%10 == 1:
		return fmt.Sprintf("%dst", k)
	case k%10 == 2:
		return fmt.Sprintf("%dnd", k)
	case k%10 == 3:
		return fmt.Sprintf("%drd", k)
	}
	return fmt.Sprintf("%dth", k)
}

// conditionsBullet explains what the conditions measure: "lan" isolates the
// transports' own cost, any other condition adds the emulated path.
func (v *view) conditionsBullet() string {
	var lan, impaired bool
	for _, c := range v.doc.Conditions {
		if c.Name == "lan" {
			lan = true
		} else {
			impaired = true
		}
	}
	var parts []string
	if lan {
		parts = append(parts, "LAN cells measure encryption/framing cost only (~0 RTT).")
	}
	if impaired {
		how := "netem"
		if v.doc.Env.ImpairmentMethod == "userspace" {
			how = "emulated (userspace impairment)"
		}
		parts = append(parts, "The other conditions add "+how+" delay and loss; that is where TCP-over-TLS-over-TCP and UDP diverge.")
	}
	return strings.Join(parts, " ")
}
