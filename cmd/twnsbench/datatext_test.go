package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// hostileNames are names a crafted results file or history line may
// carry: a terminal title escape, a GitHub Actions workflow command, one
// hidden after a line break, HTML and a Markdown link.
var hostileNames = []string{
	"\x1b]0;pwned\x07",
	"::error title=x::y",
	"ok\n::warning::z",
	"<img src=x onerror=alert(1)>",
	"[click](javascript:alert(1))",
}

// checkPrintedSafely fails when out carries a raw control character of a
// name (ESC, BEL) or a line that a CI runner would read as a workflow
// command (it trims leading space first).
func checkPrintedSafely(t *testing.T, what, out string) {
	t.Helper()
	for _, c := range []string{"\x1b", "\x07"} {
		if strings.Contains(out, c) {
			t.Errorf("%s prints a raw %q:\n%s", what, c, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if s := strings.TrimLeft(l, " \t"); strings.HasPrefix(s, "::") || strings.HasPrefix(s, "##[") {
			t.Errorf("%s prints a line that starts a workflow command: %q", what, l)
		}
	}
}

// A results file names its transports and environment: compare prints
// them quoted, on the table, in the refusal and under --force.
func TestCompareQuotesNamesFromTheFiles(t *testing.T) {
	b, err := os.ReadFile(referenceJSON)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, kernel string) string {
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		rename := map[string]string{"ssh": hostileNames[0], "wireguard": hostileNames[1], "tw": hostileNames[2]}
		for _, s := range doc["samples"].([]any) {
			s := s.(map[string]any)
			if n, ok := rename[s["transport"].(string)]; ok {
				s["transport"] = n
			}
		}
		if kernel != "" {
			doc["env"].(map[string]any)["kernel"] = kernel
		}
		out, _ := json.Marshal(doc)
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old, cur := write("old.json", ""), write("new.json", "::error title=k::"+hostileNames[0])
	code, stdout, stderr := runInProcess("compare", old, cur)
	if code != exitRefused {
		t.Fatalf("exit %d, want %d: %s", code, exitRefused, stderr)
	}
	checkPrintedSafely(t, "compare's refusal", stderr)
	code, stdout, stderr = runInProcess("compare", "--force", old, cur)
	if code != exitOK {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	checkPrintedSafely(t, "compare --force", stdout+stderr)
	for _, want := range []string{`\x1b]0;pwned\a`, `"::error title=x::y"`, `ok\n::warning::z`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("compare does not print the name quoted as %s:\n%s", want, stdout)
		}
	}
}

// rerun names the file's transports it cannot run and the options it
// drops: quoted.
func TestRerunQuotesNamesFromTheFile(t *testing.T) {
	dir := t.TempDir()
	doc := results.Document{SchemaVersion: results.SchemaVersion, Complete: true,
		Transports: []results.Transport{{Name: hostileNames[0]}},
		Config: &results.RunConfig{Transports: hostileNames, WAN: []string{"off"}, Instruments: []string{"iperf3-1"},
			CellRuns: results.CellRuns{Runs: "1"}, Measure: results.Measure{SizeBytes: 1 << 20, DurationSec: 1},
			Network: results.Network{Congestion: "cubic"}, Schedule: results.Schedule{Order: "interleaved"},
			Options: map[string]string{hostileNames[0]: "x", hostileNames[1]: "y", hostileNames[2]: "z"}}}
	f := filepath.Join(dir, "in.json")
	if err := results.WriteAtomic(f, &doc); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, args := range [][]string{{"rerun", f, "--out", out}, {"rerun", f, "--out", out, "--skip-missing"}} {
		code, stdout, stderr := runInProcess(args...)
		if code != exitRefused {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitRefused, stderr)
		}
		checkPrintedSafely(t, "rerun", stdout+stderr)
		if !strings.Contains(stderr, `\x1b]0;pwned\a`) {
			t.Errorf("%v: the quoted name is missing:\n%s", args, stderr)
		}
	}
}

// history prints its trend report to stdout: the names of its lines
// (transport, condition label, tools, kernel) come out quoted.
func TestHistoryQuotesNamesFromTheLines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hist")
	for day := 1; day <= 3; day++ {
		d := historyRunDoc(day, strings.Join(hostileNames, " "), 2.5)
		d.Cells[0].Transport = strings.Join(hostileNames, " ")
		d.Conditions[0].Label = hostileNames[1]
		d.Env.Facts = results.Facts{{Key: "iperf3", Label: "iperf3", Value: hostileNames[2]}}
		if _, err := results.AppendHistory(dir, results.HistoryLines(d)); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runInProcess("history", "--dir", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkPrintedSafely(t, "history", stdout)
	if !strings.Contains(stdout, `\\x1b\]0;pwned\\a`) { // quoted, then Markdown's escapes
		t.Errorf("history does not show the name quoted:\n%s", stdout)
	}
}

// A run's log line may carry a host's words (a failed sample's error, a
// check's reason): each call prints one line, its control characters
// quoted.
func TestConsoleQuotesWhatALineCarries(t *testing.T) {
	var b strings.Builder
	c := newConsole(&b)
	c.Logf("%s / lan: %v", "tw", errors.New(strings.Join(hostileNames, " ")))
	c.Close()
	out := b.String()
	checkPrintedSafely(t, "the run's log", out)
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, `tw / lan: \x1b]0;pwned\a ::error title=x::y ok\n::warning::z`) {
		t.Errorf("log line %q", out)
	}
}
