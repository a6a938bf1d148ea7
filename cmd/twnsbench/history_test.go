package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// historyRunDoc is a finished run's document: one goodput cell.
func historyRunDoc(day int, kernel string, goodput float64) *results.Document {
	d := &results.Document{
		Env: results.Env{Generated: fmt.Sprintf("2026-12-%02dT10:00:00Z", day), CPUModel: "AMD EPYC 7B13", Cores: 2,
			Kernel: kernel, CPUs: results.CPUs{CPUsOnline: &results.CPUSet{List: "0-1", Count: 2}}},
		Conditions: []results.Condition{{Name: results.LAN, Label: "LAN"}},
		Cells: []results.Cell{{CellKey: results.CellKey{Transport: "tw", Condition: results.LAN, Instrument: "iperf3-1", Metric: "value"},
			Unit: "Gbit/s", Better: results.BetterHigher, Summary: results.Summary{N: 6, Median: goodput, MedianCI: results.MedianCI{CILow: goodput, CIHigh: goodput, CILevel: 0.969}}}},
	}
	d.Env.Facts.Add(results.Fact{Key: "iperf3", Label: "iperf3", Value: "iperf 3.16"})
	return d
}

// recordRun is what run does at the end of a complete run with --history
// DIR (recordHistory), for a document made here.
func recordRun(t *testing.T, dir, out string, d *results.Document) string {
	t.Helper()
	var stdout bytes.Buffer
	app := &cli.App{Writer: &stdout, Flags: []cli.Flag{historyFlag()},
		Action: func(c *cli.Context) error { return recordHistory(c, &nsbench.Result{Doc: d, OutDir: out}) }}
	if err := app.Run([]string{"twnsbench", "--history", dir}); err != nil {
		t.Fatal(err)
	}
	return stdout.String()
}

// Seven runs of this machine (the last one 20 % slower) and one of a
// machine with another kernel: the run's trend report and `history` both
// flag the drop, and leave the other machine's run out, saying why.
func TestRunHistoryAndTheHistoryCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hist")
	out := t.TempDir()
	for i, g := range []float64{2.50, 2.52, 2.48, 2.51, 2.49, 2.50} {
		recordRun(t, dir, out, historyRunDoc(1+i, "6.8.0-49-generic", g))
	}
	recordRun(t, dir, out, historyRunDoc(7, "6.11.0-9-generic", 9))
	said := recordRun(t, dir, out, historyRunDoc(8, "6.8.0-49-generic", 2.0))
	if !strings.Contains(said, "history: 1 cell (of 1 run) appended to "+dir) {
		t.Errorf("run said %q", said)
	}
	trend, err := os.ReadFile(filepath.Join(out, report.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	row := "| tw · LAN · iperf3-1 · value | Gbit/s (higher is better) | 7 | ██▇███▁ | 2.50 | 2.00 |"
	for _, want := range []string{row, "**worse** (change point)", "Left out: 1 run of 1 other environment,", "kernel 6.8.0-49-generic ≠ 6.11.0-9-generic"} {
		if !bytes.Contains(trend, []byte(want)) {
			t.Errorf("the run's trend report lacks %q:\n%s", want, trend)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"+results.HistoryExt))
	if len(files) != 2 {
		t.Errorf("history files %v, want one per fingerprint (2)", files)
	}

	// `history` renders the same report from the history alone, the
	// newest run's environment by default.
	code, stdout, stderr := runInProcess("history", "--dir", dir)
	if code != exitOK || stdout != string(trend) {
		t.Errorf("history: exit %d, stderr %q; stdout differs from the run's report:\n%s", code, stderr, stdout)
	}
	hout := filepath.Join(t.TempDir(), "new")
	fp := results.Fingerprint(results.FingerprintOf(historyRunDoc(7, "6.11.0-9-generic", 9).Env))
	code, stdout, _ = runInProcess("history", "--dir", dir, "--out", hout, "--fingerprint", fp)
	b, _ := os.ReadFile(filepath.Join(hout, report.HistoryFile))
	if code != exitOK || !strings.Contains(stdout, "wrote ") || !bytes.Contains(b, []byte("Left out: 7 runs of 1 other environment,")) {
		t.Errorf("history --out --fingerprint: exit %d, %q:\n%s", code, stdout, b)
	}
}

// A bad history directory is refused with exit 2 and one line, by run
// before anything exists and by history, which then writes nothing.
func TestHistoryRefusesBadInput(t *testing.T) {
	root := t.TempDir()
	good := filepath.Join(root, "good")
	if _, err := results.AppendHistory(good, results.HistoryLines(historyRunDoc(1, "6.8.0-49-generic", 2.5))); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	os.Symlink(good, link)
	open := filepath.Join(root, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o757)
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	out := filepath.Join(root, "out")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--history", link, "--out", out}, "--history: history directory " + link + ": a symbolic link"},
		{[]string{"run", "--history", open, "--out", out}, "writable by its group or others"},
		{[]string{"history", "--dir", link, "--out", out}, "a symbolic link"},
		{[]string{"history", "--dir", open, "--out", out}, "writable by its group or others"},
		{[]string{"history", "--dir", empty, "--out", out}, "holds no history lines"},
		{[]string{"history", "--dir", filepath.Join(root, "missing"), "--out", out}, "no such file"},
		{[]string{"history", "--out", out}, "--dir DIR is required"},
		{[]string{"history", "--dir", good, "--fingerprint", "../etc", "--out", out}, "want 16 hex digits"},
		{[]string{"history", "--dir", good, "stray"}, "unexpected argument"},
	} {
		code, stdout, stderr := runInProcess(c.args...)
		if code != exitRefused || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want 2 and one line with %q (stdout %q)", c.args, code, stderr, c.want, stdout)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused command created its --out")
	}
	if es, _ := os.ReadDir(empty); len(es) != 0 {
		t.Error("a refusal wrote into the history directory")
	}
}
