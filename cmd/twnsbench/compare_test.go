package main

import (
	"encoding/json"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const referenceJSON = "../../nsbench/report/testdata/reference-bench-results.json"

func TestCompareSameFileIsAllTilde(t *testing.T) {
	code, stdout, stderr := runInProcess("compare", referenceJSON, referenceJSON)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(stdout, "\n")
	rows := 0
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "ssh ") || strings.HasPrefix(l, "wireguard ") || strings.HasPrefix(l, "tw ") {
			rows++
			if !strings.Contains(l, " ~ (p=1.000 q=1.000 n=3+3)") {
				t.Errorf("row not ~: %q", l)
			}
		}
	}
	// 3 transports × 2 conditions × (4 instruments + p50 + p99)
	if rows != 36 {
		t.Errorf("rows = %d, want 36\n%s", rows, stdout)
	}
}

func TestCompareRefusesDifferentEnvironments(t *testing.T) {
	b, err := os.ReadFile(referenceJSON)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(b, &doc)
	doc["env"].(map[string]any)["kernel"] = "6.1.0-57-amd64"
	other := filepath.Join(t.TempDir(), "other.json")
	b, _ = json.Marshal(doc)
	os.WriteFile(other, b, 0o644)

	code, _, stderr := runInProcess("compare", referenceJSON, other)
	if code != exitRefused || !strings.Contains(stderr, "environments differ") || !strings.Contains(stderr, "kernel") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	code, stdout, _ := runInProcess("compare", "--force", referenceJSON, other)
	if code != exitOK || !strings.Contains(stdout, "environments differ: kernel") {
		t.Errorf("--force: exit %d, %q", code, stdout)
	}
	if code, _, stderr := runInProcess("compare", referenceJSON); code != exitRefused || !strings.Contains(stderr, "want OLD.json NEW.json") {
		t.Errorf("one argument: exit %d %q", code, stderr)
	}
	if code, _, _ := runInProcess("compare", referenceJSON, "/nonexistent.json"); code != exitRefused {
		t.Errorf("missing file: exit %d", code)
	}
}

// Two sweeps compare per transport and N; a sweep against a run's results
// is refused in one line, exit 2.
func TestCompareClientsSweeps(t *testing.T) {
	sweep := filepath.Join(clientsRun, results.ClientsFileName)
	code, stdout, stderr := runInProcess("compare", sweep, sweep)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// 2 transports × 3 counts × (aggregate, fairness).
	if n := strings.Count(stdout, "  clients  "); n != 12 {
		t.Errorf("%d rows, want 12:\n%s", n, stdout)
	}
	for _, want := range []string{"wireguard-go  N=4        clients     aggregate  Mbit/s  324     324     +0.0 %  not tested (one sweep per side: clients are not repeats n=1+1)",
		"not tested (one index per side n=1+1)", "No row could be tested"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	for _, args := range [][]string{{sweep, referenceJSON}, {referenceJSON, sweep}} {
		code, _, stderr := runInProcess(append([]string{"compare"}, args...)...)
		if code != exitRefused || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "compare two of a kind") {
			t.Errorf("compare %v: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
}
