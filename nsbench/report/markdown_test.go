package report

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

var update = flag.Bool("update", false, "rewrite testdata/twnsbench.golden.md from the current renderer")

const (
	twnsbenchGolden = "testdata/twnsbench.golden.md"
	twnsbenchGot    = "testdata/twnsbench.got.md"
)

func f64(x float64) *float64 { return &x }
func i64(x int64) *int64     { return &x }

// twnsbenchDoc is a small twnsbench run: ssh measured with one iperf3-1 run
// and one p99 missing, tw measured but with no TCP_RR at all (the instrument
// failed) and no relay CPU reading, wireguard skipped everywhere.
func twnsbenchDoc() *results.Document {
	const payload = 64 << 20
	cpu := func(client, server, relay float64) map[string]float64 {
		return map[string]float64{"client": client, "server": server, "relay": relay}
	}
	scp := func(tr string, run int, wall, value float64, wire int64, c map[string]float64) results.Sample {
		return results.Sample{Transport: tr, Condition: "lan", Instrument: instScp, Run: run, WallSec: wall,
			Value: value, Unit: "MB/s", PayloadBytes: i64(payload), WireBytes: i64(wire), HostCPUSec: 2 * wall,
			RoleCPUSec: c}
	}
	iperf := func(tr, inst string, run int, gbps, hostCPU float64) results.Sample {
		return results.Sample{Transport: tr, Condition: "lan", Instrument: inst, Run: run, WallSec: 10,
			Value: gbps, Unit: "Gbit/s", HostCPUSec: hostCPU, RoleCPUSec: cpu(1, 2, 0.01)}
	}
	rr := func(run int, tps float64, p50, p99 *float64) results.Sample {
		return results.Sample{Transport: "ssh", Condition: "lan", Instrument: instTCPRR, Run: run, WallSec: 10,
			Value: tps, Unit: "trans/s", MeanUs: f64(30), P50Us: p50, P99Us: p99, HostCPUSec: 12,
			RoleCPUSec: cpu(4, 4, 0)}
	}
	return &results.Document{
		SchemaVersion: results.SchemaVersion,
		Complete:      true,
		Env: results.Env{
			Generated: "2026-09-01T10:00:00Z", CPUModel: "Test CPU", Cores: 8, Kernel: "6.12.0-test",
			Facts: results.Facts{{Key: "tw", Label: "tw", Value: "tw version v3.0.0"}, {Key: "openssh", Label: "OpenSSH", Value: "OpenSSH_9.6p1"},
				{Key: "iperf3", Label: "iperf3", Value: "iperf 3.16"}, {Key: "netperf", Label: "netperf", Value: "Netperf version 2.7.0"}},
			WAN: "off", Offloads: "tso/gso/gro off + gso_max_segs 1 on every veth",
			ScpForm: "scp -O", ScpOptions: "-c aes128-gcm@openssh.com -o Compression=no",
			Runs: 3, SizeGB: 0, Harness: "twnsbench v0.1.0 (go1.26)", SizeBytes: payload,
			DurationSec: 10, WarmupSec: 2, Congestion: "cubic", CongestionNote: "host default, not changed",
			Impairment: "none", Topology: "client, relay, server namespaces on a bridge namespace",
			SysctlChanges: []string{"net.core.rmem_max 212992→33554432", "net.core.wmem_max 212992→33554432"},
			Fallbacks:     []string{"tw: relay without Caddy", "iperf3 | json via stdout"},
		},
		Timings: &results.Timings{TopologyUpSec: 0.41234, TeardownSec: 0.2, TotalSec: 312.456, HarnessCPUSec: 1.5},
		Transports: []results.Transport{
			{Name: "ssh", Label: "Pure SSH", About: "is the ceiling: one OpenSSH connection straight from the server's namespace to the client's."},
			{Name: "wireguard", Label: "SSH over WireGuard"},
			{Name: "tw", Label: "SSH over Tunnel Whisperer", About: "is the real product path through the relay namespace."},
		},
		Conditions: []results.Condition{{Name: "lan", Label: "LAN (0 ms RTT, no loss)", ScpPayloadBytes: payload}},
		Samples: []results.Sample{
			iperf("ssh", instIperf1, 1, 3.5, 20),
			iperf("ssh", instIperf1, 3, 3.7, 25),
			iperf("ssh", instIperf4, 1, 3.6, 30), iperf("ssh", instIperf4, 2, 3.65, 30), iperf("ssh", instIperf4, 3, 3.7, 30),
			rr(1, 30000.4, f64(29), f64(75)), rr(2, 31000.6, f64(30), nil), rr(3, 29000, f64(31), f64(80)),
			scp("ssh", 1, 0.2, 335.5, payload+payload/20, cpu(0.16, 0.21, 0.001)),
			scp("ssh", 2, 0.19, 353.2, payload+payload/20, cpu(0.15, 0.2, 0.001)),
			scp("ssh", 3, 0.21, 319.6, payload+payload/25, cpu(0.17, 0.22, 0.002)),
			iperf("tw", instIperf1, 1, 0.97, 40), iperf("tw", instIperf1, 2, 0.95, 41), iperf("tw", instIperf1, 3, 0.99, 39),
			iperf("tw", instIperf4, 1, 1.1, 45), iperf("tw", instIperf4, 2, 1.09, 45), iperf("tw", instIperf4, 3, 1.14, 46),
			scp("tw", 1, 0.55, 122, payload+payload/16, map[string]float64{"client": 1.1, "server": 1.0}),
			scp("tw", 2, 0.56, 120, payload+payload/16, map[string]float64{"client": 1.2, "server": 1.1}),
			scp("tw", 3, 0.54, 124, payload+payload/16, map[string]float64{"client": 1.15, "server": 1.05}),
		},
		RSS: []results.RSS{
			{Transport: "ssh", Label: "Baseline (idle listeners)", PeakKB: map[string]int64{
				"server / sshd": 4692, "server / iperf3": 3840, "server / netserver": 1424}},
			{Transport: "tw", PeakKB: map[string]int64{
				"relay / xray": 42392, "client / tw client connect": 56904, "relay / caddy": 70092, "server / tw server start": 46848},
				CgroupPeakKB: map[string]int64{"relay": 121856, "client": 61440}},
		},
		Diagnostics: []results.Diagnostic{
			{Transport: "tw", Condition: "lan", Name: "client ip -s link show veth0",
				Output: "2: veth0@if3: <BROADCAST,UP> mtu 1500\n    RX: bytes 70582054 packets 48210\n"},
		},
		Skipped: []results.Skipped{{Transport: "wireguard", Reason: "no kernel WireGuard (modprobe wireguard failed)"}},
	}
}

func TestTwnsbenchGolden(t *testing.T) {
	got := Markdown(twnsbenchDoc())
	if *update {
		if err := os.WriteFile(twnsbenchGolden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(twnsbenchGolden)
	if err != nil {
		t.Fatalf("%v (run `go test ./nsbench/report/ -run TestTwnsbenchGolden -update` to create it)", err)
	}
	if bytes.Equal(got, want) {
		os.Remove(twnsbenchGot) // a stale one from an earlier failure would mislead
		return
	}
	if err := os.WriteFile(twnsbenchGot, got, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Errorf("rendered report differs from %s; wrote %s.\n%s\n"+
		"Inspect with: diff %s %s — if the change is intended, rerun with -update.",
		twnsbenchGolden, twnsbenchGot, firstLineDiff(got, want), twnsbenchGolden, twnsbenchGot)
}

// Same document, same bytes: no clock, and no dependence on map iteration
// order (the RSS and CPU maps are iterated on every render, in random order).
func TestMarkdownDeterministic(t *testing.T) {
	first := Markdown(twnsbenchDoc())
	for i := 0; i < 20; i++ {
		if got := Markdown(twnsbenchDoc()); !bytes.Equal(got, first) {
			t.Fatalf("render %d differs from the first:\n%s", i+2, firstLineDiff(got, first))
		}
	}
}

// The rules the golden file shows, stated one by one so a failure names the
// rule rather than a line number.
func TestTwnsbenchRules(t *testing.T) {
	md := string(Markdown(twnsbenchDoc()))
	for _, want := range []string{
		// Skipped everywhere: the reason in the second cell, dashes after it.
		"| SSH over WireGuard | skipped (reason under Skipped) | — | — | — | — | — | — | — | — |",
		"| SSH over WireGuard | every condition | no kernel WireGuard (modprobe wireguard failed) |",
		// One iperf3-1 run missing is flagged; TCP_RR p99 is the median of the p99s present.
		"| Pure SSH | 3.60 (3.50–3.70; n=2) | 3.65 (3.60–3.70) | 30000 (29000–31001) | 30 / 78 | 336 (320–353) |",
		// No TCP_RR samples for tw: dashes, not numbers; no relay CPU reading: a dash for that part.
		"| SSH over Tunnel Whisperer | 0.97 (0.95–0.99) | 1.10 (1.09–1.14) | — | — | 122 (120–124) | 0.6 | 6.2 % | 0.24 | 1.1 / 1.1 / — |",
		"| scp payload | 64 MiB of /dev/urandom on LAN; served from tmpfs, written to /dev/null |",
		"| Fallbacks used | tw: relay without Caddy; iperf3 \\| json via stdout |",
		"| Congestion control | cubic (host default, not changed) |",
		// Each process's VmHWM and the cgroup's memory.peak in columns of their own.
		"| Transport | Role | Peak RSS per process (VmHWM) | All the transport's processes (cgroup memory.peak) |",
		"| SSH over Tunnel Whisperer | relay | caddy 68.4 MiB, xray 41.4 MiB | 119.0 MiB |",
		"| SSH over Tunnel Whisperer | server | tw server start 45.8 MiB | — |",
		"| Baseline (idle listeners) | server | iperf3 3.8 MiB, netserver 1.4 MiB, sshd 4.6 MiB | — |",
		"| Topology up | 0.412 s |",
		"### tw / lan — client ip -s link show veth0",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Interrupted") {
		t.Error("uninterrupted run shows an Interrupted line")
	}
}

func TestInterruptedAndPerConditionSkip(t *testing.T) {
	d := twnsbenchDoc()
	d.Interrupted = "SIGINT during tw/lan scp run 3"
	d.Conditions = append(d.Conditions, results.Condition{Name: "wan", Label: "WAN (30 ms RTT, 0.1 % loss)", ScpPayloadBytes: 16 << 20})
	d.Skipped = []results.Skipped{{Transport: "wireguard", Condition: "wan", Reason: "interrupted"}}
	md := string(Markdown(d))
	lines := strings.Split(md, "\n")
	if want := "**Interrupted:** SIGINT during tw/lan scp run 3 — the tables show the samples measured before it."; lines[4] != want {
		t.Errorf("line 5 = %q, want %q", lines[4], want)
	}
	// Skipped only under wan: under lan wireguard is a row of dashes (it has no samples).
	for _, want := range []string{
		"| SSH over WireGuard | — | — | — | — | — | — | — | — | — |",
		"| SSH over WireGuard | skipped (reason under Skipped) | — | — | — | — | — | — | — | — |",
		"| SSH over WireGuard | wan | interrupted |",
		"| scp 16 MiB (MB/s) |",
		// No wan scp samples: the reason claims no measured rate.
		"64 MiB of /dev/urandom on LAN, the 16 MiB warm-up file on WAN (64 MiB would take too long there)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func TestSizeLabel(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{5368709120, "5 GiB"},
		{268435456, "256 MiB"},
		{67108864, "64 MiB"},
		{3 << 29, "1.5 GiB"},
		{1 << 40, "1 TiB"},
		{1536, "1.5 KiB"},
		{512, "512 B"},
	}
	for _, tt := range tests {
		if got := sizeLabel(tt.in); got != tt.want {
			t.Errorf("sizeLabel(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFenceOutlastsBackticks(t *testing.T) {
	if got := fence("plain"); got != "```" {
		t.Errorf("fence(plain) = %q", got)
	}
	if got := fence("a ```` b"); got != "`````" {
		t.Errorf("fence with 4 backticks = %q, want 5", got)
	}
}

func TestNilDocument(t *testing.T) {
	if got := Markdown(nil); got != nil {
		t.Errorf("Markdown(nil) = %q, want nil", got)
	}
}

// TestSkipReasonSaidOnce: a long skip reason stands once, under Skipped,
// however many tables the skipped transport has a row in.
func TestSkipReasonSaidOnce(t *testing.T) {
	d := twnsbenchDoc()
	reason := "tw not found (PATH) — build tw from the Tunnel-Whisperer repository (make build writes bin/tw) and pass --tw PATH"
	d.Conditions = append(d.Conditions, results.Condition{Name: "wan", Label: "WAN (30 ms RTT, 0.1 % loss)", ScpPayloadBytes: 16 << 20})
	d.Skipped = []results.Skipped{{Transport: "wireguard", Reason: reason}}
	d.Samples = append(d.Samples, results.Sample{Transport: "ssh", Condition: "wan", Instrument: "ping", Run: 1, Value: 30.2, Unit: "ms"})
	md := string(Markdown(d))
	if n := strings.Count(md, reason); n != 1 {
		t.Errorf("the skip reason appears %d times, want once:\n%s", n, md)
	}
	if n := strings.Count(md, "| SSH over WireGuard | "+skippedCell+" |"); n < 3 {
		t.Errorf("%d rows marked skipped, want one in each of the LAN, WAN and packet tables", n)
	}
}

// TestIncompleteRunSaysSo: a document without the completion mark (a
// killed harness) says so at the top; the reference's documents never do.
func TestIncompleteRunSaysSo(t *testing.T) {
	d := twnsbenchDoc()
	d.Complete = false
	lines := strings.Split(string(Markdown(d)), "\n")
	if want := "**Incomplete:** no completion mark: the harness was killed, crashed, or is still running — the tables show the samples measured before it stopped."; lines[4] != want {
		t.Errorf("line 5 = %q, want %q", lines[4], want)
	}
	d.Incomplete = "failed: topology: boom"
	if lines := strings.Split(string(Markdown(d)), "\n"); !strings.HasPrefix(lines[4], "**Incomplete:** failed: topology: boom") {
		t.Errorf("line 5 = %q, want the failure", lines[4])
	}
	ref, err := results.Read("testdata/reference-bench-results.json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(Markdown(ref)), "Incomplete") {
		t.Error("the reference's document is reported incomplete")
	}
}

// TestMoreMetricsFromDeclarations: a declared metric no fixed table shows —
// a new instrument's included — is rendered with its label, unit and
// direction; metrics of the fixed tables are not repeated.
func TestMoreMetricsFromDeclarations(t *testing.T) {
	d := twnsbenchDoc()
	d.Instruments = []results.Instrument{
		{Name: instIperf1, Metrics: []results.Metric{{Key: "value", Unit: "Gbit/s", Better: results.BetterHigher},
			{Key: "retransmits", Label: "TCP retransmits", Unit: "segments", Better: results.BetterLower}}},
		{Name: "probe-x", Metrics: []results.Metric{{Key: "value", Label: "probe rate", Unit: "Hz", Better: results.BetterHigher}}},
	}
	for i := range d.Samples {
		if d.Samples[i].Instrument == instIperf1 {
			d.Samples[i].Extra = map[string]float64{"retransmits": 12}
		}
	}
	d.Samples = append(d.Samples, results.Sample{Transport: "ssh", Condition: "lan", Instrument: "probe-x", Run: 1, Value: 0.0123,
		Method: "echo"})
	md := string(Markdown(d))
	for _, want := range []string{"## More metrics", "- probe-x on Pure SSH: echo.",
		"| lan | Pure SSH | iperf3-1 | TCP retransmits (segments) | 12.0 (12.0–12.0; n=2) | lower |",
		"| lan | Pure SSH | probe-x | probe rate (Hz) | 0.0123 (0.0123–0.0123; n=1) | higher |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md[strings.Index(md, "## More"):])
		}
	}
	if strings.Contains(md, "| iperf3-1 | value") {
		t.Error("a metric of the fixed tables is repeated")
	}
	d.Instruments = nil
	if strings.Contains(string(Markdown(d)), "## More metrics") {
		t.Error("a document without declarations got the section")
	}
}

// TestScpConnectionApart: a document whose scp samples time the copy apart
// from the SSH connection says how its MB/s is timed and shows the
// connection among the declared metrics; the reference's does not.
func TestScpConnectionApart(t *testing.T) {
	d := twnsbenchDoc()
	const bullet = "scp MB/s = payload ÷ the copy's own time"
	if strings.Contains(string(Markdown(d)), bullet) {
		t.Error("a document without ssh_connect_sec explains it")
	}
	d.Instruments = []results.Instrument{{Name: instScp, Metrics: []results.Metric{{Key: "value", Unit: "MB/s"},
		{Key: results.ScpConnectSec, Label: "SSH connection set-up", Unit: "s", Better: results.BetterLower}}}}
	for i := range d.Samples {
		if s := &d.Samples[i]; s.Instrument == instScp && s.Transport == "ssh" {
			s.Extra = map[string]float64{results.ScpConnectSec: 0.25, results.ScpTransferSec: s.WallSec - 0.25}
		}
	}
	md := string(Markdown(d))
	for _, want := range []string{bullet, "| lan | Pure SSH | scp | SSH connection set-up (s) | 0.250 (0.250–0.250) | lower |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestRunsAutoShowsEveryN: under --runs auto each cell's pilot fixes its
// own n, so every cell shows it, a full one too; the Environment states
// the two-stage rule and the Noise section explains the precision mark.
func TestRunsAutoShowsEveryN(t *testing.T) {
	d := twnsbenchDoc()
	d.Env.Runs = 6
	d.Env.RunsAuto = &results.RunsAuto{Precision: 0.05, MaxRuns: 20}
	var ss []results.Sample
	for _, s := range d.Samples {
		if s.Transport == "tw" && s.Instrument == instIperf1 {
			if s.Run != 1 {
				continue
			}
			for run := 1; run <= 6; run++ { // a 6-run cell: n equals Env.Runs, shown all the same
				s.Run, s.Value = run, 0.95+0.01*float64(run%3)
				ss = append(ss, s)
			}
			continue
		}
		ss = append(ss, s)
	}
	d.Samples = ss
	d.Cells = results.Cells(d)
	md := string(Markdown(d))
	for _, want := range []string{"0.96 (0.95–0.97; n=6)", "3.65 (3.60–3.70; n=3)",
		"a pilot of 6 timed runs per cell", "or some of the runs the cell's pilot planned failed"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// TestCIMethodText: the report says how its intervals are made, in words
// that match them: not "the k-th smallest and k-th largest run" (8 runs
// give the 1st and 7th smallest, 246/256 = 96.1 %), and [min, max] below 6.
func TestCIMethodText(t *testing.T) {
	md := string(Markdown(twnsbenchDoc()))
	for _, want := range []string{
		"the narrowest pair of runs whose exact binomial coverage reaches 95 %, grown from the middle out, so not always symmetric " +
			"(with 8 runs, the 1st and 7th smallest: 96.1 %).",
		"With fewer than 6 runs none reaches 95 %: the interval is the min–max range, at its real level.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "k-th largest") {
		t.Error("the report calls the intervals symmetric")
	}
	for k, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 7: "7th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 22: "22nd"} {
		if got := ordinal(k); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", k, got, want)
		}
	}
}
