package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestBuildsBadInputIsRefused: every malformed form of builds is refused
// with one line and exit 2, before anything is created.
func TestBuildsBadInputIsRefused(t *testing.T) {
	before := nsbench.Leftovers()
	dir := t.TempDir()
	a := filepath.Join(dir, "wg-a")
	if err := os.WriteFile(a, []byte("#"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#"), 0o644); err != nil {
		t.Fatal(err)
	}
	pair := []string{"--transports", "wireguard-go@a,wireguard-go@b", "--build", "a:wireguard-go=" + a, "--build", "b:wireguard-go=" + a}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--build", "a"}, "--build \"a\": want LABEL:OPTION=PATH"},
		{[]string{"--transports", "wireguard-go@,wireguard-go@b", "--build", "b:wireguard-go=" + a}, "empty build label"},
		{[]string{"--transports", "wireguard-go@a,wireguard-go@c", "--build", "a:wireguard-go=" + a}, `build "c" is not defined`},
		{append(pair, "--build", "c:wireguard-go="+a), `build "c" is used by no --transports word`},
		{[]string{"--transports", "wireguard-go@a,wireguard-go@b", "--build", "a:tw=" + a, "--build", "b:wireguard-go=" + a}, `no program option "tw"`},
		{[]string{"--transports", "wireguard-go@a,wireguard-go@b", "--build", "a:wireguard-go=" + plain, "--build", "b:wireguard-go=" + a}, "not executable"},
		{[]string{"--transports", "wireguard-go@a,wireguard-go@b", "--build", "a:wireguard-go=" + dir, "--build", "b:wireguard-go=" + a}, "not a regular file"},
		{append(pair, "--build", "a:wireguard-go="+a), "--build a:wireguard-go given twice"},
		{[]string{"--transports", "wireguard-go@a", "--build", "a:wireguard-go=" + a}, "the verdict compares exactly two"},
		{[]string{"--transports", "wireguard-go@a,wireguard-go@b,wireguard-go@a", "--build", "a:wireguard-go=" + a, "--build", "b:wireguard-go=" + a}, "given twice"},
		{[]string{"--transports", "nope@a,nope@b"}, "unknown transport"},
		{append(pair, "--min-effect", "x"), "--min-effect"},
		{append(pair, "--min-effect", "0%"), "--min-effect 0 %"},
		{append(pair, "--max-rounds", "1"), "--max-rounds 1"},
		{append(pair, "--fail-on", "bogus"), `unknown instrument "bogus"`},
		{append(pair, "--runs", "auto"), "--runs auto: not with builds"},
		{[]string{"--transports", "ssh", "--min-effect", "5%"}, "need builds"},
		{[]string{"--transports", "ssh", "--profile"}, "--profile need builds"},
		{[]string{"--transports", "ssh", "--build", "a:wireguard-go=" + a}, "used by no --transports word"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		code, _, stderr := runInProcess(append(append([]string{"run"}, tc.args...), "--out", out)...)
		if code != exitRefused {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, exitRefused, stderr)
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: stderr %q lacks %q", tc.args, stderr, tc.want)
		}
		if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "twnsbench: ") {
			t.Errorf("%v: want one line 'twnsbench: …', got %q", tc.args, stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v: created the output directory", tc.args)
		}
	}
	if after := newLeftovers(before); len(after) > 0 {
		t.Errorf("refused runs created %v", after)
	}
}

// TestProfileWithoutPerfIsRefused: --profile where perf is not on the
// PATH is refused with one line naming how to install it, exit 2, before
// anything is created.
func TestProfileWithoutPerfIsRefused(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "wg-a")
	if err := os.WriteFile(a, []byte("#"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runInProcess("run", "--transports", "wireguard-go@a,wireguard-go@b", "--build", "a:wireguard-go="+a,
		"--build", "b:wireguard-go="+a, "--profile", "--out", out)
	if code != exitRefused || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--profile needs perf") ||
		!strings.Contains(stderr, "linux-perf") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and one line saying --profile needs perf", code, stdout, stderr, exitRefused)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused run created %s", out)
	}
}

// TestRerunRefusesBuilds: a run of builds names its programs by path,
// which rerun never takes from a file: refused, nothing created.
func TestRerunRefusesBuilds(t *testing.T) {
	dir := t.TempDir()
	doc := results.Document{SchemaVersion: results.SchemaVersion, Complete: true,
		Transports: []results.Transport{{Name: "wireguard-go@a"}, {Name: "wireguard-go@b"}},
		Config: &results.RunConfig{Transports: []string{"wireguard-go@a", "wireguard-go@b"}, WAN: []string{"off"}, Instruments: []string{"iperf3-1"},
			CellRuns: results.CellRuns{Runs: "3"}, Measure: results.Measure{SizeBytes: 1 << 20, DurationSec: 1},
			Network: results.Network{Congestion: "cubic"}, Schedule: results.Schedule{Order: "interleaved"}}}
	f := filepath.Join(dir, "in.json")
	if err := results.WriteAtomic(f, &doc); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, _, stderr := runInProcess("rerun", f, "--out", out)
	if code != exitRefused || !strings.Contains(stderr, "wireguard-go@a") || !strings.Contains(stderr, "run --build") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming the build and run --build", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused rerun created %s", out)
	}
}

// TestRunExitPrecedence: a complete run's exit code, from its failed
// samples and its counted verdicts: failed samples have their own code
// (4), a confirmed regression wins over them (1, naming both), and they
// win over an undecided verdict (3) and a --strict verification (1).
func TestRunExitPrecedence(t *testing.T) {
	cell := func(verdict string, counts bool) results.Verdict {
		v := results.Verdict{Counts: counts}
		v.Transport, v.A, v.B, v.Condition, v.Instrument, v.Metric, v.Verdict = "wireguard-go", "wireguard-go@a", "wireguard-go@b", "lan", "iperf3-1", "value", verdict
		return v
	}
	strict := errors.New("1 WAN cell(s) failed verification")
	for _, tc := range []struct {
		name     string
		failures int
		cells    []results.Verdict // nil: no builds
		verified error
		want     int
		says     string
	}{
		{"measured", 0, nil, nil, exitOK, ""},
		{"samples failed", 2, nil, nil, exitSamplesFailed, "2 samples could not be measured"},
		{"samples failed, strict verification", 1, nil, strict, exitSamplesFailed, "1 samples could not be measured"},
		{"strict verification", 0, nil, strict, exitFailed, "1 WAN cell(s) failed verification"},
		{"builds: no change", 0, []results.Verdict{cell("no change", true)}, nil, exitOK, ""},
		{"builds: no change, samples failed", 3, []results.Verdict{cell("no change", true)}, nil, exitSamplesFailed, "3 samples could not be measured"},
		{"builds: slower", 0, []results.Verdict{cell("slower", true)}, nil, exitFailed, "regression: wireguard-go@b is slower"},
		{"builds: slower, samples failed", 1, []results.Verdict{cell("undecided", true), cell("slower", true)}, nil, exitFailed, "regression: wireguard-go@b is slower than wireguard-go@a in 1 cell(s): wireguard-go lan/iperf3-1/value; also 1 samples could not be measured"},
		{"builds: slower where --fail-on does not look, samples failed", 1, []results.Verdict{cell("no change", true), cell("slower", false)}, nil, exitSamplesFailed, "1 samples could not be measured"},
		{"builds: undecided", 0, []results.Verdict{cell("undecided", true)}, nil, exitInconclusive, "undecided: 1 cell(s)"},
		{"builds: undecided, samples failed", 1, []results.Verdict{cell("undecided", true)}, nil, exitSamplesFailed, "1 samples could not be measured"},
		{"builds: nothing counted", 0, []results.Verdict{cell("slower", false)}, nil, exitInconclusive, "no cell --fail-on selects"},
	} {
		doc := &results.Document{Samples: []results.Sample{{Transport: "wireguard-go@a"}}}
		if tc.cells != nil {
			doc.Verdicts = &results.Verdicts{Cells: tc.cells}
		}
		err := runOutcome(&nsbench.Result{Doc: doc, Failures: tc.failures}, verdictError(doc), tc.verified)
		got := exitCode(err)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if got != tc.want || !strings.HasPrefix(msg, tc.says) || (tc.says == "") != (err == nil) {
			t.Errorf("%s: exit %d (%v), want %d and %q", tc.name, got, err, tc.want, tc.says)
		}
	}
}
