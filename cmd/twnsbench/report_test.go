package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// referenceReport is the report the reference harness made from
// referenceJSON (compare_test.go), as the report package's golden tests use
// it.
const referenceReport = "../../nsbench/report/testdata/reference-bench-report.md"

// copyReference puts the reference JSON in a fresh directory.
func copyReference(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(referenceJSON)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), results.FileName)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// `twnsbench report` on the reference run's JSON reproduces the reference
// report byte for byte, into the JSON's directory by default, with both
// charts beside it.
func TestReportReproducesReference(t *testing.T) {
	in := copyReference(t)
	code, stdout, stderr := runInProcess("report", "--in", in)
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	want, err := os.ReadFile(referenceReport)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(in)
	got, err := os.ReadFile(filepath.Join(dir, nsbench.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("re-rendered report differs from %s", referenceReport)
	}
	for _, name := range []string{report.ChartFile, report.ChartDarkFile, report.MetricsChartFile, report.MetricsChartDarkFile,
		report.LatencyCDFFile, report.LatencyCDFDarkFile} {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		wellFormed(t, p, b)
		if !strings.Contains(stdout, "wrote "+p+"\n") {
			t.Errorf("stdout does not name %s:\n%s", p, stdout)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, report.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(html, []byte("<!DOCTYPE html>")) {
		t.Errorf("%s is not an HTML page", report.HTMLFile)
	}
	// The reference carries no series: no time series chart, and stdout
	// does not claim one.
	if _, err := os.Stat(filepath.Join(dir, report.TimeSeriesFile)); err == nil || strings.Contains(stdout, report.TimeSeriesFile) {
		t.Errorf("a time series chart was written for a document without series")
	}
}

func wellFormed(t *testing.T, name string, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := dec.Token(); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", name, err)
		}
	}
}

func TestReportOut(t *testing.T) {
	in := copyReference(t)
	out := filepath.Join(t.TempDir(), "new", "dir") // report creates it, as run does
	if code, stdout, stderr := runInProcess("report", "--in", in, "--out", out); code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	for _, name := range []string{nsbench.ReportFile, report.ChartFile, report.ChartDarkFile, report.HTMLFile} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("--out: %v", err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(in), name)); err == nil {
			t.Errorf("--out given, but %s was written beside the input too", name)
		}
	}
}

// Bad input is refused with one line and exit 2, writing nothing.
func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid.json")
	if err := os.WriteFile(invalid, []byte(`{"samples": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"missing file":      {"report", "--in", filepath.Join(dir, "nope.json")},
		"invalid JSON":      {"report", "--in", invalid},
		"no --in":           {"report"},
		"positional file":   {"report", invalid},
		"not results":       {"report", "--in", empty},
		"--out uncreatable": {"report", "--in", copyReference(t), "--out", "/proc/twnsbench-nope"},
		"unknown flag":      {"report", "--in", invalid, "--bogus"},
		"--out is a file":   {"report", "--in", copyReference(t), "--out", invalid},
		"empty --in string": {"report", "--in", ""},
	} {
		code, stdout, stderr := runInProcess(args...)
		if code != exitRefused {
			t.Errorf("%s: exit %d, want %d (stderr %q)", name, code, exitRefused, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "twnsbench: ") {
			t.Errorf("%s: want one line 'twnsbench: …' on stderr, got %q", name, stderr)
		}
		if stdout != "" {
			t.Errorf("%s: stdout %q", name, stdout)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "bench-*")); len(m) > 0 {
		t.Errorf("refused reports wrote %v", m)
	}
}

// Every subcommand's --help lists each of its flags, and the top-level
// help lists every subcommand.
func TestHelpListsFlags(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	code, top, stderr := runInProcess("--help")
	if code != exitOK {
		t.Fatalf("--help: exit %d: %s", code, stderr)
	}
	for _, cmd := range app.Commands {
		if cmd.Hidden {
			if strings.Contains(top, cmd.Name) {
				t.Errorf("top-level help shows hidden command %s", cmd.Name)
			}
			continue
		}
		if !strings.Contains(top, cmd.Name) || !strings.Contains(top, cmd.Usage) {
			t.Errorf("top-level help lacks %s: %s", cmd.Name, cmd.Usage)
		}
		code, help, stderr := runInProcess(cmd.Name, "--help")
		if code != exitOK {
			t.Errorf("%s --help: exit %d: %s", cmd.Name, code, stderr)
			continue
		}
		if !strings.Contains(help, cmd.Usage) {
			t.Errorf("%s --help lacks its usage line %q", cmd.Name, cmd.Usage)
		}
		for _, f := range cmd.Flags {
			for _, name := range f.Names() {
				dashes := "--"
				if len(name) == 1 {
					dashes = "-"
				}
				if !strings.Contains(help, dashes+name) {
					t.Errorf("%s --help does not list %s%s:\n%s", cmd.Name, dashes, name, help)
				}
			}
		}
	}
}

// The "done when": after a real run, `twnsbench report` on its JSON
// reproduces its Markdown byte for byte, and the charts draw its transport.
func TestReportReproducesRun(t *testing.T) {
	_, out, _ := quickRun(t)
	written := map[string][]byte{}
	for _, name := range []string{nsbench.ReportFile, report.ChartFile, report.ChartDarkFile, report.HTMLFile,
		report.MetricsChartFile, report.MetricsChartDarkFile} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatalf("the run did not write %s: %v", name, err)
		}
		written[name] = b
	}
	if !bytes.Contains(written[nsbench.ReportFile], []byte("![benchmark chart]("+report.ChartFile+")")) {
		t.Error("the run's report does not link its chart")
	}
	again := t.TempDir()
	if code, stdout, stderr := runInProcess("report", "--in", filepath.Join(out, results.FileName), "--out", again); code != exitOK {
		t.Fatalf("report: exit %d\n%s%s", code, stdout, stderr)
	}
	for name, want := range written {
		got, err := os.ReadFile(filepath.Join(again, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s re-rendered from the run's JSON differs from the run's own", name)
		}
	}
	svg := string(written[report.ChartFile])
	wellFormed(t, report.ChartFile, written[report.ChartFile])
	// One bar per transport in every panel: the LAN's four reference
	// panels at least, and as many for WireGuard as for Pure SSH.
	ssh, wg := strings.Count(svg, `<g class="bar" data-transport="ssh">`), strings.Count(svg, `<g class="bar" data-transport="wireguard">`)
	if ssh < 4 || wg != ssh {
		t.Errorf("chart has %d ssh and %d wireguard bars, want the same number, at least 4 (the LAN panels)", ssh, wg)
	}
}

// clientsRun holds a many-client sweep's document and the report files its
// run wrote (run --clients 1,2,4 --transports ssh,wireguard-go --duration
// 2s); clientsStall one whose client2 stalled (run --clients 2 --transports
// ssh,wireguard-go --duration 5s, everything client2 sent dropped by an
// nftables rule once its path was up: killed after 35 s, its row kept, the
// next transport measured). After a deliberate change to the report,
// regenerate them with `twnsbench report --in DIR/clients-results.json`.
const (
	clientsRun   = "../../nsbench/report/testdata/clients-run"
	clientsStall = "../../nsbench/report/testdata/clients-stall"
)

// renderClients runs `twnsbench report` on a copy of dir's
// clients-results.json, checks that it writes dir's report files byte for
// byte, and returns the page.
func renderClients(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, results.ClientsFileName))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), results.ClientsFileName)
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runInProcess("report", "--in", in)
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	for _, name := range []string{report.ClientsReportFile, report.ClientsChartFile, report.ClientsChartDarkFile, report.ClientsHTMLFile} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(filepath.Dir(in), name)
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("re-rendered %s differs from %s's", name, dir)
		}
		if !strings.Contains(stdout, "wrote "+p+"\n") {
			t.Errorf("stdout does not name %s:\n%s", p, stdout)
		}
	}
	page, err := os.ReadFile(filepath.Join(filepath.Dir(in), report.ClientsHTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(page)
}

// `twnsbench report` on a sweep's saved clients-results.json writes the
// files its run wrote, byte for byte, and the page holds the tables and
// the chart in both themes; a stalled client's row shows a lower bound,
// no fairness, and the page warns of it.
func TestReportReproducesClientsRun(t *testing.T) {
	html := renderClients(t, clientsRun)
	for _, want := range []string{"<td>4</td><td>324</td>", "WireGuard (wireguard-go), a peer per client", `<div class="chart theme-light">` + "\n<svg",
		`<div class="chart theme-dark">` + "\n<svg", "prefers-color-scheme: dark"} {
		if !strings.Contains(html, want) {
			t.Errorf("%s lacks %q", report.ClientsHTMLFile, want)
		}
	}
	if strings.Contains(html, "clients-chart.svg)") || strings.Contains(html, "![") || strings.Contains(html, `id="warnings"`) {
		t.Errorf("%s carries the Markdown's pointer to the chart file, or warnings for a clean sweep", report.ClientsHTMLFile)
	}
	html = renderClients(t, clientsStall)
	for _, want := range []string{"<td>2 (1 measured)</td><td>≥ 1855</td><td>1855 / 1855 / 1855</td><td>—</td>",
		"1 of 4 clients loaded were not measured", "client2: iperf3: client2/iperf3: context deadline exceeded"} {
		if !strings.Contains(html, want) {
			t.Errorf("the stalled sweep's %s lacks %q", report.ClientsHTMLFile, want)
		}
	}
}
