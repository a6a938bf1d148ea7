package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestBuildsSections: each build's program is listed with its version
// and SHA-256; the verdicts name the rounds' order, mark the cells that
// set the exit code, and show an estimate that was not computed as a dash.
func TestBuildsSections(t *testing.T) {
	ratio, lo, hi, mde := 0.93, 0.90, 0.96, 0.03
	d := &results.Document{
		Transports: []results.Transport{
			{Name: "wireguard-go@old", Label: "SSH over WireGuard (wireguard-go) @old", Build: &results.Build{Label: "old",
				Programs: []results.BuildProgram{{Option: "wireguard-go", Path: "/opt/wg", Version: "golang.zx2c4.com/wireguard v0.0.0-2023", SHA256: "ab12"}}}},
			{Name: "wireguard-go@new", Build: &results.Build{Label: "new",
				Programs: []results.BuildProgram{{Option: "wireguard-go", Path: "./bin/wg", SHA256: "cd34"}}}},
		},
		Verdicts: &results.Verdicts{Order: "ABBA", MinEffect: 0.05, FailOn: []string{"*/*/value"}, Cells: []results.Verdict{
			{VerdictCell: results.VerdictCell{Transport: "wireguard-go", A: "wireguard-go@old", B: "wireguard-go@new", Condition: "lan", Instrument: "iperf3-1", Metric: "value"},
				Estimate: results.Estimate{Ratio: &ratio, Lo: &lo, Hi: &hi, MDE: &mde}, PairCounts: results.PairCounts{Pairs: 8}, Verdict: "slower", Counts: true},
			{VerdictCell: results.VerdictCell{Transport: "wireguard-go", A: "wireguard-go@old", B: "wireguard-go@new", Condition: "lan", Instrument: "tcp_rr", Metric: "p99_us"},
				PairCounts: results.PairCounts{Pairs: 8, Censored: 1}, Verdict: "undecided"},
		}},
	}
	md := string(Markdown(d))
	for _, want := range []string{
		"## Builds",
		"| wireguard-go@old | old | wireguard-go | golang.zx2c4.com/wireguard v0.0.0-2023 | ab12 | /opt/wg |",
		"| wireguard-go@new | new | wireguard-go | — | cd34 | ./bin/wg |",
		"## Verdicts",
		"paired rounds in ABBA order (A then B in odd rounds, B then A in even ones)",
		"at least 5 %",
		"| wireguard-go | wireguard-go@old | wireguard-go@new | lan | iperf3-1 | value | 8 | 0.930 | 0.900–0.960 | ±3 % | slower ✱ |",
		"| wireguard-go | wireguard-go@old | wireguard-go@new | lan | tcp_rr | p99_us | 8 (1 censored) | — | — | — | undecided |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	sum := VerdictSummary(d)
	if strings.Count(sum, "\n") != 1 || !strings.Contains(sum, "wireguard-go@new vs wireguard-go@old, lan / iperf3-1 / value: slower (B/A 0.930") {
		t.Errorf("summary %q: want the one counted cell", sum)
	}
	if l := RegressionLine(d.Verdicts.Cells[:1]); !strings.HasPrefix(l, "regression: wireguard-go@new is slower than wireguard-go@old in 1 cell(s): wireguard-go lan/iperf3-1/value") {
		t.Errorf("regression line %q", l)
	}
	// A cell adjusted for the host's other work shows both MDEs, and the
	// section says what the adjustment is.
	slope, before := 1.4, 0.83
	d.Verdicts.Cells[0].HostAdjustment = results.HostAdjustment{NoiseSlope: &slope, MDEUnadjusted: &before}
	md = string(Markdown(d))
	for _, want := range []string{"| ±3 % (±83 % before adjusting for the host's other work) | slower ✱ |", "as if A and B had been left the same share"} {
		if !strings.Contains(md, want) {
			t.Errorf("report of an adjusted cell lacks %q", want)
		}
	}
	// A cell decided with its metric's own min effect is named with it;
	// cells of the run's (here recorded per cell too) are not.
	d.Verdicts.Cells[0].MinEffect = 0.05
	d.Verdicts.Cells[1].Instrument, d.Verdicts.Cells[1].Metric, d.Verdicts.Cells[1].MinEffect = "iperf3-instr", "value", 0.02
	md = string(Markdown(d))
	if want := "at least 5 % (iperf3-instr/value 2 %, its metric's own); no change only when the whole interval lies within ±5 % (iperf3-instr/value 2 %, its metric's own)"; !strings.Contains(md, want) {
		t.Errorf("report of a cell with its own min effect lacks %q", want)
	}
	if md := string(Markdown(&results.Document{Transports: []results.Transport{{Name: "ssh"}}})); strings.Contains(md, "## Builds") || strings.Contains(md, "## Verdicts") {
		t.Error("a run without builds has builds sections")
	}
}

// TestBuildsAcrossHostsRows: across hosts each role's host's copy of a
// build's program is a row of its own, with what that host read of it; a
// version the host did not read is a dash.
func TestBuildsAcrossHostsRows(t *testing.T) {
	d := &results.Document{Transports: []results.Transport{{Name: "ssh@a", Build: &results.Build{Label: "a", Programs: []results.BuildProgram{
		{Option: "sshd", Path: "/opt/a/sshd", Version: "OpenSSH_9.2p1", SHA256: "ab12", Hosts: []results.ProgramCopy{
			{Role: "server", Host: "root@10.0.0.3:22", Path: "/var/tmp/twnsb-3fa9c1-server/build-a-sshd", SHA256: "ab12"}}},
	}}}}}
	md := string(Markdown(d))
	for _, want := range []string{
		"| ssh@a | a | sshd | OpenSSH_9.2p1 | ab12 | /opt/a/sshd |",
		"| ssh@a | a | sshd on the server's host, root@10.0.0.3:22 | — | ab12 | /var/tmp/twnsb-3fa9c1-server/build-a-sshd |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestVerdictDifferenceTableCells: a cell decided on B − A (rrul's latency
// increase) states the difference in its unit, never a ratio, in the
// report's verdict table (the CI formats: ci's TestVerdictDifferenceCell).
func TestVerdictDifferenceTableCells(t *testing.T) {
	d, lo, hi, mde := 3.2, 1.05, 5.5, 0.8
	v := results.Verdict{VerdictCell: results.VerdictCell{Unit: "ms"}, PairCounts: results.PairCounts{Pairs: 12, Bounded: 2},
		Estimate: results.Estimate{Scale: "difference", Delta: &d, DeltaLo: &lo, DeltaHi: &hi, MDE: &mde}}
	if got := []string{changeText(v), changeInterval(v), changeMDE(v), pairsText(v)}; strings.Join(got, "|") != "B − A +3.20 ms|+1.05 to +5.50 ms|±0.800 ms|12 (2 at a bound)" {
		t.Errorf("table cells %q", got)
	}
}
