package report

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

const (
	wanGolden = "testdata/wan.golden.md"
	wanGot    = "testdata/wan.got.md"
)

// wanDoc is a small run with a WAN condition through the userspace
// impairment: ssh verified, wireguard flagged (its RTT was off), and the
// impairment's counters as diagnostics.
func wanDoc() *results.Document {
	const payload, warm = 64 << 20, 32 << 20
	s := func(tr, cond, inst string, v float64) results.Sample {
		return results.Sample{Transport: tr, Condition: cond, Instrument: inst, Run: 1, WallSec: 2, Value: v,
			HostCPUSec: 1, RoleCPUSec: map[string]float64{"client": 0.5, "server": 0.5, "relay": 0, "impair": 0.3}}
	}
	rr := s("ssh", "wan", instTCPRR, 31.5)
	rr.P50Us, rr.P99Us = f64(30596), f64(34000)
	ms := func(x float64) *float64 { return &x }
	seed := uint64(42)
	return &results.Document{
		SchemaVersion: results.SchemaVersion,
		Env: results.Env{
			Generated: "2026-09-01T10:00:00Z", Cores: 2, Kernel: "6.18.0-test", WAN: "30ms:0.1%", Runs: 1,
			Harness: "twnsbench v0.1.0 (go1.26)", SizeBytes: payload,
			Impairment:       "userspace impairment (this kernel has no sch_netem): forwarder in the switch namespace",
			ImpairmentMethod: "userspace", WANSeed: &seed,
			Fallbacks: []string{"wan: the userspace impairment instead of netem (netem: CONFIG_NET_SCH_NETEM is not set)"},
		},
		Transports: []results.Transport{{Name: "ssh", Label: "Pure SSH"}, {Name: "wireguard", Label: "SSH over WireGuard"}},
		Conditions: []results.Condition{
			{Name: "lan", Label: "LAN (0 ms RTT, no loss)", ScpPayloadBytes: payload},
			{Name: "wan", Label: "WAN (30 ms RTT, 0.1 % loss)", ScpPayloadBytes: warm},
		},
		Samples: []results.Sample{
			s("ssh", "lan", instIperf1, 1.5), s("ssh", "wan", instIperf1, 0.06), rr, s("ssh", "wan", instScp, 1.98),
			s("wireguard", "lan", instIperf1, 1.1), s("wireguard", "wan", instIperf1, 0.05),
		},
		RSS: []results.RSS{},
		Diagnostics: []results.Diagnostic{{Transport: "ssh", Condition: "wan", Name: "switch port server (userspace impairment counters)",
			Output: "userspace impairment on switch port server (server egress): limit 100000 delay 15ms loss 0.1% seed 42\n" +
				" Sent 212322954 bytes 140529 pkt (dropped 135, overlimits 0 requeues 0)\n backlog 66b 1p\n" +
				" lost outside the emulation: socket drops 0, send errors 0\ndrop ratio: 135/(140529+135) = 0.096 %"}},
		Verification: []results.Verification{
			{Transport: "ssh", Condition: "wan", Method: "userspace", ConfiguredRTTMs: 30, MeasuredRTTMs: ms(30.2945), RTTProbes: 20,
				ConfiguredLossPct: 0.1, MeasuredLossPct: ms(0.1), LossLowPct: ms(0.0681), LossHighPct: ms(0.1469), LossConfidence: 0.9973,
				LossProbeDatagrams: 60000, LossProbeLost: 60, Packets: 389063, Lost: 384, CounterLossPct: ms(0.0987), LossJudged: true, OK: true},
			{Transport: "wireguard", Condition: "wan", Method: "userspace", ConfiguredRTTMs: 30, MeasuredRTTMs: ms(31.6), RTTProbes: 20,
				ConfiguredLossPct: 0.1, MeasuredLossPct: ms(0.2), LossLowPct: ms(0.1522), LossHighPct: ms(0.2627), LossConfidence: 0.9973,
				LossProbeDatagrams: 60000, LossProbeLost: 120, Packets: 20000, Lost: 18, CounterLossPct: ms(0.09), LossJudged: true,
				Note: "RTT off by +1.60 ms (tolerance ±1ms); loss 0.200 % end to end (120 of 60000 datagrams), its 99.7 % interval 0.152–0.263 % does not hold the configured 0.1 %"},
		},
	}
}

// wanSections extracts the sections this golden pins down — the WAN
// results table, Verification and Diagnostics — so that changes elsewhere
// in the report (owned and golden-tested by twnsbench.golden.md) do not
// touch it.
func wanSections(md []byte) []byte {
	var out bytes.Buffer
	keep := false
	for _, line := range strings.SplitAfter(string(md), "\n") {
		if strings.HasPrefix(line, "## ") {
			keep = strings.HasPrefix(line, "## Results — WAN") || line == "## Verification\n" || line == "## Diagnostics\n"
		}
		if keep {
			out.WriteString(line)
		}
	}
	return out.Bytes()
}

func TestWANGolden(t *testing.T) {
	got := wanSections(Markdown(wanDoc()))
	if *update {
		if err := os.WriteFile(wanGolden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(wanGolden)
	if err != nil {
		t.Fatalf("%v (run `go test ./nsbench/report/ -run TestWANGolden -update` to create it)", err)
	}
	if bytes.Equal(got, want) {
		os.Remove(wanGot)
		return
	}
	if err := os.WriteFile(wanGot, got, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Errorf("rendered report differs from %s; wrote %s.\n%s\nInspect with: diff %s %s — if the change is intended, rerun with -update.",
		wanGolden, wanGot, firstLineDiff(got, want), wanGolden, wanGot)
}

func TestVerificationSection(t *testing.T) {
	ms := func(x float64) *float64 { return &x }
	md := string(Markdown(wanDoc()))
	for _, want := range []string{
		"## Verification",
		"| Pure SSH | wan | userspace | 30 / 30.29 | 0.1 % / 0.100 % (0.068–0.147 %) | 60 / 60000 | 0.099 % (389063) | ok | — |",
		"| SSH over WireGuard | wan | userspace | 30 / 31.60 | 0.1 % / 0.200 % (0.152–0.263 %) | 120 / 60000 | 0.090 % (20000) | ⚠ off | RTT off by +1.60 ms",
		"Loss, end to end:",
		"| SSH over WireGuard ⚠ | 0.05 (0.05–0.05) |",
		"⚠ The measured RTT or loss of this cell was off the configured condition: see Verification.",
		"the userspace impairment's own counters per impaired direction",
		"emulated (userspace impairment) delay and loss",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The flag marks the WAN row only: the LAN cell was not impaired.
	if strings.Contains(md, "| SSH over WireGuard ⚠ | 1.10") {
		t.Error("the LAN row is flagged")
	}
	// Verification comes right after the results tables.
	if i, j := strings.Index(md, "## Results — WAN"), strings.Index(md, "## Verification"); i < 0 || j < i ||
		strings.Index(md, "## Memory footprint") < j {
		t.Error("Verification is not between the results tables and the memory table")
	}
	// A document from before the loss probe: its one loss figure is the
	// counters', and says so.
	old := wanDoc()
	old.Verification = []results.Verification{{Transport: "ssh", Condition: "wan", ConfiguredRTTMs: 30, MeasuredRTTMs: ms(30.2),
		ConfiguredLossPct: 0.1, MeasuredLossPct: ms(0.0987), Packets: 389063, Lost: 384, LossJudged: true, OK: true}}
	if want := "| 0.1 % / 0.099 % (impairment counters, not end to end) | — | 0.099 % (389063) | ok |"; !strings.Contains(string(Markdown(old)), want) {
		t.Errorf("an old document's verification lacks %q", want)
	}
	// A probe whose count was not usable: the figure is the impairment's
	// loss draws, marked as the fallback, the datagrams' count beside it.
	fb := wanDoc()
	fb.Verification = []results.Verification{{Transport: "ssh", Condition: "wan", ConfiguredRTTMs: 30, MeasuredRTTMs: ms(30.2),
		ConfiguredLossPct: 0.1, MeasuredLossPct: ms(0.1), LossLowPct: ms(0.059), LossHighPct: ms(0.169), LossProbeDatagrams: 31990, LossProbeLost: 190,
		LossFallback: "the probe's own sockets dropped 158 datagrams the path delivered", LossJudged: true, OK: true}}
	if want := "| 0.1 % / 0.100 % (0.059–0.169 %) (fallback: the impairment's loss draws over the probe) | 190 / 31990 |"; !strings.Contains(string(Markdown(fb)), want) {
		t.Errorf("a fallback verification lacks %q", want)
	}
	// A document without verification records has no such section.
	d := wanDoc()
	d.Verification = nil
	if strings.Contains(string(Markdown(d)), "Verification") {
		t.Error("a Verification section without records")
	}
}
