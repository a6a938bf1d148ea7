package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// A rerun runs exactly the recorded configuration again — the drawn loss
// seed included — and prints the comparison, environment first. iperf3
// alone: through a lossy WAN a 1 s TCP_RR may see no transaction answered
// (a retransmission timeout longer than the test), a failed sample that
// would fail the run for a reason this test is not about.
func TestRerunReproducesConfiguration(t *testing.T) {
	nstest.RequireRoot(t)
	orig, out := runAndRead(t, "--transports", "ssh", "--instruments", "iperf3-1", "--runs", "2",
		"--duration", "1s", "--warmup", "0s", "--size", "1MiB", "--wan", "20ms:0.5%", "--order", "reference")
	if orig.Config == nil || orig.Config.Seed == nil {
		t.Fatalf("no configuration or seed recorded: %+v", orig.Config)
	}
	if p := orig.Config.DriftProbe; p == nil || *p {
		t.Errorf("drift_probe %v: want false recorded (runInProcess's --drift-probe=false), for the rerun to keep", p)
	}
	again := t.TempDir()
	code, stdout, stderr := runInProcess("rerun", filepath.Join(out, results.FileName), "--out", again)
	if code != exitOK {
		t.Fatalf("rerun exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	cur, err := results.Read(filepath.Join(again, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(orig.Config, cur.Config) {
		a, _ := json.Marshal(orig.Config)
		b, _ := json.Marshal(cur.Config)
		t.Errorf("configurations differ:\n%s\n%s", a, b)
	}
	for _, want := range []string{"rerun of ", "environment", "ssh  ", "iperf3-1", "Mann-Whitney"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("rerun output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Index(stdout, "environment") > strings.Index(stdout, "Mann-Whitney") {
		t.Error("the environment must be listed before the comparison")
	}
}

// A file whose transports this host cannot run is refused with their
// names, unless --skip-missing leaves them out.
func TestRerunRefusesWhatCannotRunHere(t *testing.T) {
	if ok, _ := preflight.KernelFeature("wireguard"); ok {
		t.Skip("this kernel has WireGuard: wireguard-kernel can run here")
	}
	dir := t.TempDir()
	doc := results.Document{SchemaVersion: results.SchemaVersion, Complete: true,
		Transports: []results.Transport{{Name: "wireguard-kernel"}},
		Config: &results.RunConfig{Transports: []string{"wireguard-kernel"}, WAN: []string{"off"}, Instruments: []string{"iperf3-1"},
			CellRuns: results.CellRuns{Runs: "1"}, Measure: results.Measure{SizeBytes: 1 << 20, DurationSec: 1},
			Network: results.Network{Congestion: "cubic"}, Schedule: results.Schedule{Order: "interleaved"}}}
	f := filepath.Join(dir, "in.json")
	if err := results.WriteAtomic(f, &doc); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, args := range [][]string{{"rerun", f, "--out", out}, {"rerun", f, "--out", out, "--skip-missing"}} {
		code, _, stderr := runInProcess(args...)
		if code != exitRefused || !strings.Contains(stderr, "wireguard-kernel") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming wireguard-kernel", args, code, stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused rerun created %s", out)
	}
}

// A results file is someone else's: rerun takes from it only what
// describes the measurement. Its options naming a program (--tw), a host
// inventory, a key, a known_hosts or an output are dropped, each named,
// and the program is never started.
func TestRerunTakesNoProgramHostOrPathFromTheFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", t.TempDir()) // no tw here: the rerun is refused after the options are read
	marker := filepath.Join(dir, "executed")
	prog := filepath.Join(dir, "x")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n: >"+marker+"\necho 'tw 1.0'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(dir, "elsewhere")
	doc := results.Document{SchemaVersion: results.SchemaVersion, Complete: true,
		Transports: []results.Transport{{Name: "tw"}},
		Config: &results.RunConfig{Transports: []string{"tw"}, WAN: []string{"off"}, Instruments: []string{"iperf3-1"},
			CellRuns: results.CellRuns{Runs: "1"}, Measure: results.Measure{SizeBytes: 1 << 20, DurationSec: 1},
			Network: results.Network{Congestion: "cubic"}, Schedule: results.Schedule{Order: "interleaved"},
			Options: map[string]string{"tw": prog, "caddy": prog, "host": filepath.Join(dir, "hosts"),
				"identity": filepath.Join(dir, "key"), "known-hosts": filepath.Join(dir, "kh"), "out": elsewhere,
				"wireguard": "userspace"}}}
	f := filepath.Join(dir, "in.json")
	if err := results.WriteAtomic(f, &doc); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runInProcess("rerun", f, "--out", filepath.Join(dir, "out"))
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("rerun executed %s, a program the results file named", prog)
	}
	if code != exitRefused {
		t.Errorf("exit %d, want %d (no tw on PATH); stderr %q", code, exitRefused, stderr)
	}
	for _, k := range []string{"tw", "caddy", "host", "identity", "known-hosts", "out"} {
		if n := strings.Count(stderr, "ignoring the file's option "+k+"="); n != 1 {
			t.Errorf("stderr names the dropped option %s %d times, want once:\n%s", k, n, stderr)
		}
	}
	if strings.Contains(stderr, "option wireguard=") {
		t.Errorf("wireguard describes the measurement, it must be kept:\n%s", stderr)
	}
	for _, p := range []string{elsewhere, filepath.Join(dir, "out")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("a refused rerun created %s", p)
		}
	}
}

// A many-client sweep records no run configuration: rerun refuses it in
// one line, exit 2, and creates nothing; so does run --clients with
// --history.
func TestRerunAndHistoryRefuseClientsSweeps(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"rerun", filepath.Join(clientsRun, results.ClientsFileName), "--out", out},
		{"run", "--clients", "1,2", "--history", t.TempDir(), "--out", out},
	} {
		code, _, stderr := runInProcess(args...)
		if code != exitRefused || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "clients") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line about the sweep", args, code, stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused command created %s", out)
	}
}
