package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
	"github.com/twnsbench/twnsbench/nsbench/verdict"
)

// ClientsReportFile is the many-client sweep's report inside the output
// directory.
const ClientsReportFile = "clients-report.md"

// Decimal places of the many-client table.
const (
	precMbps     = 0 // per-client and aggregate Mbit/s
	precFairness = 3 // Jain's index
	precSeconds  = 1 // setup and teardown
)

// ClientsMarkdown is the many-client sweep's report: per transport, one
// row per client count N with the aggregate throughput, the per-client
// spread, Jain's fairness index, the server's (and relay's) CPU-seconds
// and peak memory, and how long the N clients took to set up and tear
// down; then what each added client costs in memory. A figure not
// measured is a dash.
func ClientsMarkdown(c *results.Clients) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Many clients on one server\n\n")
	fmt.Fprintf(&b, "%s. Every client namespace has its own path through the transport to the one server and one iperf3 stream (%s s, the server sending), all at once. ",
		clientsCounts(c.Counts), num(c.DurationSec, 0))
	if slices.ContainsFunc(c.Rows, func(r results.ClientsRow) bool { return r.OverlapSec != nil }) {
		b.WriteString("The streams start together, and each client's rate is read over the window in which all of them were sending (its whole 0.1 s iperf3 intervals inside it, not its own stream's), whose length each table's notes give; a window shorter than half the streams gives no aggregate. ")
	}
	b.WriteString("Fairness is Jain's index over the clients' rates: 1 when all are equal, 1/N when one takes everything. ")
	b.WriteString("The server's CPU-seconds are its transport processes' over the measurement, their peak memory since the path was built; setup is from nothing to the last client ready.\n")
	if !c.Complete {
		reason := c.Incomplete
		if reason == "" {
			reason = "the sweep did not reach its end"
		}
		fmt.Fprintf(&b, "\n**Incomplete:** %s.\n", mdText(reason))
	}
	if c.Env.Runs > 1 {
		fmt.Fprintf(&b, "\nThe sweep ran %d times, every count of every transport once a run; the table and chart show the first run, "+
			"the later runs' figures and failures are the JSON's `repeats`, and `compare` tests the aggregate and fairness over all of them.\n", c.Env.Runs)
		if n := laterTroubles(c.Rows); n > 0 {
			fmt.Fprintf(&b, "\n**%d of the later runs' measurements failed, missed a client or left residue:** see `repeats`.\n", n)
		}
	}
	b.WriteString(clientsConditions(c))
	b.WriteString(clientsHosts(c))
	for _, tr := range clientsTransports(c.Rows) {
		rows := clientsRowsOf(c.Rows, tr)
		fmt.Fprintf(&b, "\n## %s\n\n", mdText(clientsLineLabel(c, rows[0])))
		b.WriteString(tableRow("Clients", "Aggregate Mbit/s", "Per client Mbit/s min / median / max", "Fairness",
			"Server CPU-s", "Server peak MiB", "Relay CPU-s", "Relay peak MiB", "Setup s", "Teardown s") + "\n")
		b.WriteString(separatorRow(10) + "\n")
		for _, r := range rows {
			b.WriteString(clientsRow(r) + "\n")
		}
		b.WriteString(clientsNotes(rows))
	}
	b.WriteString(clientsVerification(c))
	b.WriteString(clientsBuilds(c))
	if len(c.Rows) > 0 {
		fmt.Fprintf(&b, "\n![Throughput, fairness and the server's peak memory against the number of clients](%s)\n", ClientsChartFile)
	}
	fmt.Fprintf(&b, "\n%s\n", clientsPageLine)
	for _, s := range c.Skipped {
		fmt.Fprintf(&b, "\n%s: skipped: %s\n", mdText(s.Label), mdText(s.Reason))
	}
	return []byte(b.String())
}

// clientsBuilds lists each build's programs (version and SHA-256), how
// the builds were swept and, per client count, the verdict on B against A;
// "" for a sweep without builds.
func clientsBuilds(c *results.Clients) string {
	if len(c.Builds) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Builds\n\n")
	b.WriteString("The builds were swept side by side: count by count, in alternating order (A then B at one count, B then A at the next, turning from run to run), so that the host's drift falls on both alike.\n\n")
	b.WriteString(tableRow("Row", "Build", "Program", "Version", "SHA-256", "Path") + "\n")
	b.WriteString(separatorRow(6) + "\n")
	for _, row := range slices.Sorted(maps.Keys(c.Builds)) {
		build := c.Builds[row]
		for _, p := range build.Programs {
			b.WriteString(tableRow(row, build.Label, p.Option, orDash(p.Version), orDash(p.SHA256), p.Path) + "\n")
		}
	}
	if len(c.Verdicts) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "\n## Verdicts\n\nBuild B's aggregate throughput against A's, per client count: one pair per run of the sweep (`--runs`), "+
		"decided as a run's build cells are: slower or faster only when significant, at least %s and confirmed by each half of the pairs on its own, the later half at least %d "+
		"(so from %d runs on); no change only when the whole interval lies within ±%s. The exit code does not depend on it.\n\n",
		pctText(c.MinEffect), verdict.ConfirmPairs, 2*verdict.ConfirmPairs, pctText(c.MinEffect))
	b.WriteString(tableRow("Transport", "A", "B", "Clients", "Pairs", "B/A", "Interval", "Smallest detectable", "Verdict") + "\n")
	b.WriteString(separatorRow(9) + "\n")
	for _, v := range c.Verdicts {
		n := strconv.Itoa(v.N)
		if v.Condition != "" && v.Condition != results.LAN {
			n += ", " + mdText(clientsConditionLabel(c, v.Condition))
		}
		b.WriteString(tableRow(v.Transport, v.A, v.B, n, pairsText(v.Verdict), changeText(v.Verdict),
			changeInterval(v.Verdict), changeMDE(v.Verdict), v.Verdict.Verdict) + "\n")
	}
	return b.String()
}

// laterTroubles counts the repeats (the sweep's later runs) that failed,
// missed a client or left residue: the table shows the first run only.
func laterTroubles(rows []results.ClientsRow) int {
	n := 0
	for _, row := range rows {
		for _, r := range row.Repeats {
			if r.Error != "" || len(r.PerClientMbps) < r.N || (r.Timing != nil && len(r.Timing.Residue) > 0) {
				n++
			}
		}
	}
	return n
}

func clientsCounts(ns []int) string {
	words := make([]string, len(ns))
	for i, n := range ns {
		words[i] = fmt.Sprint(n)
	}
	return "Clients: " + strings.Join(words, ", ")
}

// clientsTransports are the rows' lines in their first appearance's
// order: each transport, under each condition (clientsLine).
func clientsTransports(rows []results.ClientsRow) []string {
	var out []string
	for _, r := range rows {
		if !slices.Contains(out, clientsLine(r)) {
			out = append(out, clientsLine(r))
		}
	}
	return out
}

// clientsLine is the table and chart line r belongs to: its transport, and
// its condition when it was measured under a WAN condition.
func clientsLine(r results.ClientsRow) string {
	if r.Condition == "" {
		return r.Transport
	}
	return r.Transport + " / " + r.Condition
}

func clientsRowsOf(rows []results.ClientsRow, line string) []results.ClientsRow {
	var out []results.ClientsRow
	for _, r := range rows {
		if clientsLine(r) == line {
			out = append(out, r)
		}
	}
	return out
}

// clientsLineLabel is the label of r's line: the transport's, with its
// condition's under a WAN condition, and "on the LAN" beside those.
func clientsLineLabel(c *results.Clients, r results.ClientsRow) string {
	switch {
	case r.Condition != "":
		return r.Label + ", " + clientsConditionLabel(c, r.Condition)
	case len(c.Conditions) > 0:
		return r.Label + ", LAN"
	}
	return r.Label
}

// clientsConditionLabel is the label of the condition named name.
func clientsConditionLabel(c *results.Clients, name string) string {
	for _, cond := range c.Conditions {
		if cond.Name == name {
			return cond.Label
		}
	}
	return name
}

// clientsConditions says how a sweep's WAN conditions were made, and the
// fallbacks; "" for a sweep on the LAN alone.
func clientsConditions(c *results.Clients) string {
	if len(c.Conditions) == 0 {
		return ""
	}
	var labels []string
	for _, cond := range c.Conditions {
		labels = append(labels, cond.Label)
	}
	var b strings.Builder
	where := "on the LAN and under"
	if !slices.ContainsFunc(c.Rows, func(r results.ClientsRow) bool { return r.Condition == "" }) {
		where = "under"
	}
	fmt.Fprintf(&b, "\nEvery transport and count was measured %s %s, each on a testbed of its own with the condition set before the clients' paths came up; "+
		"the condition as measured from the clients is in the Verification section.\n", where, mdText(strings.Join(labels, ", ")))
	if c.Env.Impairment != "" {
		fmt.Fprintf(&b, "\nImpairment: %s.\n", mdText(c.Env.Impairment))
	}
	for _, f := range c.Env.Fallbacks {
		fmt.Fprintf(&b, "\nFallback: %s.\n", mdText(f))
	}
	return b.String()
}

// clientsHosts states where the roles of a sweep across hosts ran, every
// client's address with them, and what each machine was; "" on one host.
func clientsHosts(c *results.Clients) string {
	hs := c.Env.HostsAcross()
	if len(hs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe roles ran on other hosts, the clients in namespaces of their own on the client's host, each at its own address: %s. "+
		"Each row below was read on its host.\n\n", mdText(c.Env.Topology))
	b.WriteString(strings.Join(hostsTable(hs), "\n") + "\n")
	return b.String()
}

// clientsVerification is, per row measured under a WAN condition, the
// condition configured against the one measured: the first client's RTT
// and loss probes (a run's), every client's RTT, and the verdict; "" for
// a sweep on the LAN alone.
func clientsVerification(c *results.Clients) string {
	var b strings.Builder
	for _, r := range c.Rows {
		if r.WAN == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n## Verification\n\nEach WAN row's condition as measured once the clients' paths were up, before their load: the RTT (median of TCP handshakes) from the first client and the loss end to end (its loss probe, both directions, with its interval), as a run's WAN cells; the RTT from every client to the server; the impairment's own loss over the row.\n\n")
			b.WriteString(tableRow("Transport", "Condition", "Clients", "RTT ms (configured)", "Clients' RTT ms min / max", "Loss % (interval)", "Configured loss %", "Impairment's loss %", "Verified") + "\n")
			b.WriteString(separatorRow(9) + "\n")
		}
		v := r.WAN.Verification
		rtt := dash
		if v.MeasuredRTTMs != nil {
			rtt = num(*v.MeasuredRTTMs, 2)
		}
		rtt += " (" + num(v.ConfiguredRTTMs, 0) + ")"
		loss := dash
		if v.MeasuredLossPct != nil {
			loss = num(*v.MeasuredLossPct, 3)
			if v.LossLowPct != nil && v.LossHighPct != nil {
				loss += " (" + num(*v.LossLowPct, 3) + "–" + num(*v.LossHighPct, 3) + ")"
			}
		}
		counted := dash
		if v.CounterLossPct != nil {
			counted = num(*v.CounterLossPct, 3)
		}
		verdict := "ok"
		if !v.OK {
			verdict = "**NOT VERIFIED**"
		}
		if v.Note != "" {
			verdict += ": " + mdText(v.Note)
		}
		b.WriteString(tableRow(mdText(r.Label), mdText(clientsConditionLabel(c, r.Condition)), strconv.Itoa(r.N), rtt,
			clientRTTSpread(r.WAN.ClientRTTMs), loss, num(v.ConfiguredLossPct, 3), counted, verdict) + "\n")
	}
	return b.String()
}

// clientRTTSpread is the least and the greatest of the clients' RTTs,
// with how many of them were measured when not all.
func clientRTTSpread(rtts []*float64) string {
	var got []float64
	for _, x := range rtts {
		if x != nil {
			got = append(got, *x)
		}
	}
	if len(got) == 0 {
		return dash
	}
	s := num(slices.Min(got), 2) + " / " + num(slices.Max(got), 2)
	if len(got) < len(rtts) {
		s += fmt.Sprintf(" (%d of %d clients)", len(got), len(rtts))
	}
	return s
}

// clientsRow renders one N. A row that measured fewer clients than N says
// so beside the count.
func clientsRow(r results.ClientsRow) string {
	n := fmt.Sprint(r.N)
	if m := len(r.PerClientMbps); m != r.N {
		n += fmt.Sprintf(" (%d measured)", m)
	}
	s := stats.SummarizeClients(r.N, r.PerClientMbps)
	agg, spread, fair := dash, dash, dash
	if s.N > 0 {
		agg = num(s.Aggregate, precMbps)
		if s.Missing > 0 {
			agg = "≥ " + agg // the measured clients' sum: a lower bound
		}
		spread = fmt.Sprintf("%s / %s / %s", num(s.PerClient.Min, precMbps), num(s.PerClient.Median, precMbps), num(s.PerClient.Max, precMbps))
	}
	if !math.IsNaN(s.Fairness) {
		fair = num(s.Fairness, precFairness)
	}
	setup, teardown := dash, dash
	if r.Timing != nil {
		if r.Timing.SetupSec > 0 {
			setup = num(r.Timing.SetupSec, precSeconds)
		}
		teardown = num(r.Timing.TeardownSec, precSeconds)
	}
	scpu, smem := roleCostCells(r.Server)
	rcpu, rmem := roleCostCells(r.Relay)
	return tableRow(n, agg, spread, fair, scpu, smem, rcpu, rmem, setup, teardown)
}

func roleCostCells(c *results.RoleCost) (cpu, mem string) {
	if c == nil {
		return dash, dash
	}
	cpu, mem = num(c.CPUSec, precCPU), dash
	if c.PeakKB != nil {
		mem = num(float64(*c.PeakKB)/1024, precMiB)
	}
	return cpu, mem
}

// clientsNotes says what the server's and the relay's figures hold, what
// each added client costs in memory (the least-squares slope over the Ns
// with a peak), and every failure and residue.
func clientsNotes(rows []results.ClientsRow) string {
	var b strings.Builder
	for _, side := range []struct {
		name string
		cost func(results.ClientsRow) *results.RoleCost
	}{
		{"server", func(r results.ClientsRow) *results.RoleCost { return r.Server }},
		{"relay", func(r results.ClientsRow) *results.RoleCost { return r.Relay }},
	} {
		var ns []int
		var kb []float64
		what, from := "", ""
		for _, r := range rows {
			if c := side.cost(r); c != nil && c.PeakKB != nil && r.Error == "" {
				ns, kb = append(ns, r.N), append(kb, float64(*c.PeakKB))
				what, from = c.What, c.PeakFrom
			}
		}
		if what == "" {
			continue
		}
		fmt.Fprintf(&b, "\nThe %s's figures are those of %s (peak memory: %s).", side.name, what, from)
		if per := stats.PerAdded(ns, kb); !math.IsNaN(per) {
			fmt.Fprintf(&b, " Memory per added client: %s MiB (the slope over %d client counts).", num(per/1024, 2), len(ns))
		}
		b.WriteString("\n")
	}
	var common []string
	for _, r := range rows {
		if r.OverlapSec != nil {
			common = append(common, fmt.Sprintf("%s s (N = %d)", num(*r.OverlapSec, 2), r.N))
		}
	}
	if len(common) > 0 {
		fmt.Fprintf(&b, "\nThe clients' common window, every client sending: %s.\n", strings.Join(common, ", "))
	}
	list := false
	for _, r := range rows {
		list = list || len(r.Failed) > 0 || r.Error != "" || (r.Timing != nil && len(r.Timing.Residue) > 0)
		for _, f := range r.Failed {
			fmt.Fprintf(&b, "\n- N = %d: %s", r.N, mdText(f))
		}
		if m := r.N - len(r.PerClientMbps); m > 0 && r.Error == "" && len(r.PerClientMbps) > 0 {
			list = true
			fmt.Fprintf(&b, "\n- N = %d: %d of %d clients not measured: the aggregate is the sum of the %d measured (a lower bound, ≥), the spread is theirs alone, and fairness is not computed",
				r.N, m, r.N, len(r.PerClientMbps))
		}
		if r.Error != "" {
			fmt.Fprintf(&b, "\n- N = %d: failed: %s", r.N, mdText(r.Error))
		}
		if r.Timing != nil && len(r.Timing.Residue) > 0 {
			fmt.Fprintf(&b, "\n- N = %d: teardown left %s", r.N, mdText(strings.Join(r.Timing.Residue, ", ")))
		}
	}
	if list {
		b.WriteString("\n")
	}
	return b.String()
}
