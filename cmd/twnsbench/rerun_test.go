package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// A rerun runs exactly the recorded configuration again — the drawn loss
// seed included — and prints the comparison, environment first.
func TestRerunReproducesConfiguration(t *testing.T) {
	requireRoot(t)
	orig, out := runAndRead(t, "--transports", "ssh", "--instruments", "iperf3-1,tcp_rr", "--runs", "2",
		"--duration", "1s", "--warmup", "0s", "--size", "1MiB", "--wan", "20ms:0.5%", "--order", "reference")
	if orig.Config == nil || orig.Config.Seed == nil {
		t.Fatalf("no configuration or seed recorded: %+v", orig.Config)
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
			Runs: "1", SizeBytes: 1 << 20, DurationSec: 1, Congestion: "cubic", Order: "interleaved"}}
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
