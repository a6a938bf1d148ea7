package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

func kb(x int64) *int64 { return &x }

// The table's figures come from the clients' rates: the aggregate is
// their sum, fairness Jain's index (one of four hogging → 0.250), memory
// per added client the slope of the server's peaks; absent figures are
// dashes, a stalled client is named and costs only its share.
func TestClientsMarkdown(t *testing.T) {
	c := &results.Clients{
		Counts: []int{1, 2, 4}, DurationSec: 10, Complete: true,
		Rows: []results.ClientsRow{
			{Transport: "ssh", Label: "Pure SSH", N: 1, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{900}},
				Timing:      &results.ClientsTiming{SetupSec: 1.04, PathsSec: 0.5, TeardownSec: 0.31},
				ClientsCost: results.ClientsCost{Server: &results.RoleCost{What: "sshd and its sessions", CPUSec: 9.96, PeakKB: kb(8192), PeakFrom: "VmHWM sum"}}},
			{Transport: "ssh", Label: "Pure SSH", N: 2, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{450, 450}},
				Timing:      &results.ClientsTiming{SetupSec: 1.5, TeardownSec: 0.4},
				ClientsCost: results.ClientsCost{Server: &results.RoleCost{What: "sshd and its sessions", CPUSec: 10, PeakKB: kb(9216), PeakFrom: "VmHWM sum"}}},
			{Transport: "ssh", Label: "Pure SSH", N: 4, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{1000, 0, 0}, Failed: []string{"client4: iperf3: context deadline exceeded"}},
				Timing:      &results.ClientsTiming{SetupSec: 2.5, TeardownSec: 0.5},
				ClientsCost: results.ClientsCost{Server: &results.RoleCost{What: "sshd and its sessions", CPUSec: 11, PeakKB: kb(11264), PeakFrom: "VmHWM sum"}}},
			{Transport: "wireguard-go", Label: "WireGuard", N: 1, Error: "wireguard-go: handshake: timeout"},
			{Transport: "tw", Label: "tw", N: 1, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{180}},
				ClientsCost: results.ClientsCost{Server: &results.RoleCost{What: "tw server start", CPUSec: 0.8, PeakKB: kb(39000), PeakFrom: "VmHWM sum"},
					Relay: &results.RoleCost{What: "Caddy, Xray and sshd", CPUSec: 2.3, PeakKB: kb(120 * 1024), PeakFrom: "VmHWM sum"}}},
			{Transport: "tw", Label: "tw", N: 3, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{100, 100, 100}},
				ClientsCost: results.ClientsCost{Server: &results.RoleCost{What: "tw server start", CPUSec: 0.9, PeakKB: kb(40000), PeakFrom: "VmHWM sum"},
					Relay: &results.RoleCost{What: "Caddy, Xray and sshd", CPUSec: 2.5, PeakKB: kb(130 * 1024), PeakFrom: "VmHWM sum"}}},
		},
		Skipped: []results.Skipped{{Transport: "tw-old", Label: "SSH over Tunnel Whisperer", Reason: "many clients are not built for this transport yet"}},
	}
	md := string(ClientsMarkdown(c))
	for _, want := range []string{
		"| 1 | 900 | 900 / 900 / 900 | 1.000 | 10.0 | 8.0 | — | — | 1.0 | 0.3 |",
		"| 2 | 900 | 450 / 450 / 450 | 1.000 | 10.0 | 9.0 | — | — | 1.5 | 0.4 |",
		// client4 stalled: the aggregate of four was not measured (≥ the
		// three's sum) and neither was their fairness (0.333 over three).
		"| 4 (3 measured) | ≥ 1000 | 0 / 0 / 1000 | — | 11.0 | 11.0 | — | — | 2.5 | 0.5 |",
		"- N = 4: client4: iperf3: context deadline exceeded",
		"- N = 4: 1 of 4 clients not measured: the aggregate is the sum of the 3 measured (a lower bound, ≥), the spread is theirs alone, and fairness is not computed",
		// (8192, 9216, 11264) KiB against N (1, 2, 4): slope 1024 KiB.
		"Memory per added client: 1.00 MiB (the slope over 3 client counts)",
		"| 1 (0 measured) | — | — | — | — | — | — | — | — | — |",
		"- N = 1: failed: wireguard-go: handshake: timeout",
		"SSH over Tunnel Whisperer: skipped: many clients are not built for this transport yet",
		"| 3 | 300 | 100 / 100 / 100 | 1.000 | 0.9 | 39.1 | 2.5 | 130.0 | — | — |",
		// The relay's peaks 120 and 130 MiB at N 1 and 3: 5 MiB a client.
		"The relay's figures are those of Caddy, Xray and sshd (peak memory: VmHWM sum). Memory per added client: 5.00 MiB",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Incomplete") {
		t.Errorf("a complete sweep reported incomplete")
	}
}

// One line per transport and panel where the rows measured it, a point
// per N; a panel no row measured says so; the same document gives the
// same bytes.
func TestClientsChart(t *testing.T) {
	c := &results.Clients{Counts: []int{1, 2, 4}, Rows: []results.ClientsRow{
		{Transport: "ssh", Label: "Pure SSH", N: 1, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{900}}},
		{Transport: "ssh", Label: "Pure SSH", N: 2, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{450, 450}}},
		{Transport: "ssh", Label: "Pure SSH", N: 4, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{400, 0, 0, 0}}},
		{Transport: "wireguard-go", Label: "WireGuard", N: 1, Error: "boom"},
		{Transport: "wireguard-go", Label: "WireGuard", N: 2, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{100, 300}}},
		// One of four stalled: neither its aggregate nor its fairness is a point.
		{Transport: "wireguard-go", Label: "WireGuard", N: 4, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{100, 100, 100}, Failed: []string{"client4: stalled"}}},
	}}
	svg := string(ClientsChart(c, Light))
	// ssh: throughput and fairness; wireguard-go: the same; no memory.
	if n := strings.Count(svg, "<polyline"); n != 4 {
		t.Errorf("%d lines, want 4 (2 transports × throughput, fairness)", n)
	}
	// ssh 3 points × 2 panels, wireguard-go 1 point × 2 panels.
	if n := strings.Count(svg, `class="point"`); n != 8 {
		t.Errorf("%d points, want 8", n)
	}
	if !strings.Contains(svg, "not measured") || !strings.Contains(svg, "Pure SSH") || !strings.Contains(svg, "WireGuard") {
		t.Errorf("chart lacks the empty memory panel's note or a legend entry:\n%s", svg)
	}
	if string(ClientsChart(c, Light)) != svg {
		t.Error("the chart is not deterministic")
	}
}

// A sweep read over the clients' common window says so and gives each
// N's window; one that overlapped under half the streams has no
// aggregate and says why. A document without windows reads as before.
func TestClientsMarkdownCommonWindow(t *testing.T) {
	sec := func(x float64) *float64 { return &x }
	c := &results.Clients{
		Counts: []int{1, 2, 4}, DurationSec: 10, Complete: true,
		Rows: []results.ClientsRow{
			{Transport: "ssh", Label: "Pure SSH", N: 1, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{900}, OverlapSec: sec(9.93)}},
			{Transport: "ssh", Label: "Pure SSH", N: 2, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{450, 440}, OverlapSec: sec(9.5)}},
			{Transport: "ssh", Label: "Pure SSH", N: 4, ClientsWindow: results.ClientsWindow{OverlapSec: sec(2.97)},
				Error: "the clients' streams overlapped only 2.97 s of their 10 s, less than half: no concurrent aggregate"},
		},
	}
	md := string(ClientsMarkdown(c))
	for _, want := range []string{
		"each client's rate is read over the window in which all of them were sending",
		"The clients' common window, every client sending: 9.93 s (N = 1), 9.50 s (N = 2), 2.97 s (N = 4).",
		"| 2 | 890 | 440 / 445 / 450 |",
		"| 4 (0 measured) | — | — | — |",
		"- N = 4: failed: the clients' streams overlapped only 2.97 s of their 10 s, less than half: no concurrent aggregate",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	for i := range c.Rows {
		c.Rows[i].OverlapSec = nil
	}
	if md := string(ClientsMarkdown(c)); strings.Contains(md, "common window") || strings.Contains(md, "all of them were sending") {
		t.Errorf("a document without windows speaks of one:\n%s", md)
	}
}

// A sweep run more than once says that the table is its first run, and
// how many of the later runs' measurements had trouble; one run says
// nothing of runs.
func TestClientsMarkdownRuns(t *testing.T) {
	c := &results.Clients{Counts: []int{1}, Complete: true, Rows: []results.ClientsRow{{Transport: "ssh", Label: "Pure SSH", N: 1, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{900}}}}}
	if md := string(ClientsMarkdown(c)); strings.Contains(md, "times") {
		t.Errorf("one run speaks of runs:\n%s", md)
	}
	c.Env.Runs = 3
	c.Rows[0].Repeats = []results.ClientsRow{{Transport: "ssh", N: 1, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{890}}}, {Transport: "ssh", N: 1, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{910}}}}
	md := string(ClientsMarkdown(c))
	if !strings.Contains(md, "The sweep ran 3 times, every count of every transport once a run; the table and chart show the first run") || strings.Contains(md, "later runs' measurements") {
		t.Errorf("three runs not said, or troubles where none were:\n%s", md)
	}
	c.Rows[0].Repeats[1] = results.ClientsRow{Transport: "ssh", N: 1, ClientsWindow: results.ClientsWindow{Failed: []string{"client: stalled"}}}
	if md := string(ClientsMarkdown(c)); !strings.Contains(md, "**1 of the later runs' measurements failed, missed a client or left residue:** see `repeats`.") {
		t.Errorf("a later run's failure not said:\n%s", md)
	}
}

// A sweep of two builds lists each build's programs, a dash for a version
// not read, and says how the builds were swept; a sweep without builds has
// no such section.
func TestClientsMarkdownBuilds(t *testing.T) {
	c := &results.Clients{Counts: []int{1}, DurationSec: 2, Complete: true, Rows: []results.ClientsRow{
		{Transport: "ssh@a", Label: "Pure SSH @a", N: 1, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{900}}},
		{Transport: "ssh@b", Label: "Pure SSH @b", N: 1, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{880}}},
	}}
	if md := string(ClientsMarkdown(c)); strings.Contains(md, "## Builds") {
		t.Errorf("a sweep without builds has a builds section:\n%s", md)
	}
	c.Builds = map[string]results.Build{
		"ssh@b": {Label: "b", Programs: []results.BuildProgram{{Option: "ssh", Path: "/opt/new/ssh", SHA256: "bb"}}},
		"ssh@a": {Label: "a", Programs: []results.BuildProgram{{Option: "ssh", Path: "/usr/bin/ssh", Version: "9.2", SHA256: "aa"}}},
	}
	md := string(ClientsMarkdown(c))
	if strings.Contains(md, "## Verdicts") {
		t.Errorf("a sweep without verdicts has a verdicts section:\n%s", md)
	}
	f := func(x float64) *float64 { return &x }
	c.MinEffect = 0.05
	c.Verdicts = []results.ClientsVerdict{{N: 1, Verdict: results.Verdict{
		VerdictCell: results.VerdictCell{Transport: "ssh", A: "ssh@a", B: "ssh@b", Metric: "aggregate", Unit: "Mbit/s", Better: results.BetterHigher},
		Estimate:    results.Estimate{Ratio: f(0.8), Lo: f(0.78), Hi: f(0.82), MDE: f(0.03)},
		PairCounts:  results.PairCounts{Pairs: 12}, Verdict: "slower"}}}
	md = string(ClientsMarkdown(c))
	for _, want := range []string{
		"## Builds", "alternating order",
		"| ssh@a | a | ssh | 9.2 | aa | /usr/bin/ssh |\n| ssh@b | b | ssh | — | bb | /opt/new/ssh |",
		"## Verdicts", "at least 5 %", "from 12 runs on",
		"| ssh | ssh@a | ssh@b | 1 | 12 | ",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// A sweep on the LAN and under a WAN condition: a table per condition,
// the impairment and its fallback stated, the Verification section with
// every WAN row (a row off its condition marked and warned of), the chart
// a line per transport and condition. A sweep without one shows none of
// it (the tests above).
func TestClientsMarkdownWAN(t *testing.T) {
	ms := func(x float64) *float64 { return &x }
	ok := results.Verification{Transport: "ssh", Condition: "wan", ConfiguredRTTMs: 20, MeasuredRTTMs: ms(20.1),
		MeasuredLossPct: ms(0), LossLowPct: ms(0), LossHighPct: ms(0.028), CounterLossPct: ms(0), OK: true}
	off := ok
	off.MeasuredRTTMs, off.OK, off.Note = ms(31), false, "RTT off by +11.00 ms"
	c := &results.Clients{Counts: []int{1, 2}, DurationSec: 2, Complete: true,
		Conditions: []results.Condition{{Name: "wan", Label: "WAN (20 ms RTT, no loss)"}},
		Env:        results.Env{Impairment: "userspace impairment: the forwarder", Fallbacks: []string{"wan: the userspace impairment instead of netem"}},
		Rows: []results.ClientsRow{
			{Transport: "ssh", Label: "Pure SSH", N: 1, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{900}}},
			{Transport: "ssh", Label: "Pure SSH", N: 2, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{450, 450}}},
			{Transport: "ssh", Label: "Pure SSH", N: 1, Condition: "wan", ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{300}},
				WAN: &results.ClientsWAN{ClientRTTMs: []*float64{ms(20.1)}, Verification: ok}},
			{Transport: "ssh", Label: "Pure SSH", N: 2, Condition: "wan", ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{200, 250}},
				WAN: &results.ClientsWAN{ClientRTTMs: []*float64{ms(31), nil}, Verification: off}},
		}}
	md := string(ClientsMarkdown(c))
	for _, want := range []string{
		"measured on the LAN and under WAN (20 ms RTT, no loss)",
		"Impairment: userspace impairment: the forwarder.",
		"Fallback: wan: the userspace impairment instead of netem.",
		"## Pure SSH, LAN\n\n| Clients |",
		"| 2 | 900 | 450 / 450 / 450 |",
		"## Pure SSH, WAN (20 ms RTT, no loss)\n\n| Clients |",
		"| 2 | 450 | 200 / 225 / 250 |",
		"## Verification",
		"| Pure SSH | WAN (20 ms RTT, no loss) | 1 | 20.10 (20) | 20.10 / 20.10 | 0.000 (0.000–0.028) | 0.000 | 0.000 | ok |",
		"| Pure SSH | WAN (20 ms RTT, no loss) | 2 | 31.00 (20) | 31.00 / 31.00 (1 of 2 clients) | 0.000 (0.000–0.028) | 0.000 | 0.000 | **NOT VERIFIED**: RTT off by +11.00 ms |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	svg := string(ClientsChart(c, Light))
	if !strings.Contains(svg, ">Pure SSH, LAN<") || !strings.Contains(svg, ">Pure SSH, WAN (20 ms RTT, no loss)<") {
		t.Errorf("chart legend lacks a line per condition:\n%s", svg)
	}
	var warned bool
	for _, w := range clientsWarnings(c) {
		warned = warned || strings.HasPrefix(w.Text, "1 WAN row failed verification")
	}
	if !warned {
		t.Errorf("warnings %+v, want the WAN row off its condition", clientsWarnings(c))
	}
}

// A sweep across hosts says where each role ran, every client's address
// with it, and what each machine was; on one host it says nothing of
// hosts.
func TestClientsMarkdownHosts(t *testing.T) {
	c := &results.Clients{Counts: []int{1, 2}, Complete: true, Rows: []results.ClientsRow{{Transport: "ssh", Label: "Pure SSH", N: 1, ClientsWindow: results.ClientsWindow{PerClientMbps: []float64{900}}}}}
	if md := string(ClientsMarkdown(c)); strings.Contains(md, "other hosts") {
		t.Errorf("a sweep on one host speaks of hosts:\n%s", md)
	}
	c.Env.Topology = "client 10.0.0.50 on root@h1:22, client2 10.0.0.51 on root@h1:22, server 10.0.0.60 on root@h2:22"
	c.Env.Hosts = []results.Host{{Roles: []string{"client", "client2"}, Login: "root@h1:22", Kernel: "6.1.0", Cores: 4, NIC: results.NIC{Iface: "eth0", MTU: 1500}},
		{Roles: []string{"server"}, Login: "root@h2:22", Kernel: "6.12.0"}}
	md := string(ClientsMarkdown(c))
	for _, want := range []string{
		"each at its own address: client 10.0.0.50 on root@h1:22, client2 10.0.0.51 on root@h1:22, server 10.0.0.60 on root@h2:22.",
		"| client, client2 | root@h1:22 | 6.1.0 | — | 4 | eth0 | — | — | 1500 | — | — |",
		"| server | root@h2:22 | 6.12.0 | — | — | — | — | — | — | — | — |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
