package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// selfcheck measures both ways in pairs, writes its document, and its
// exit code is its verdict's: 0 pass, 1 fail, 3 inconclusive.
func TestSelfCheck(t *testing.T) {
	requireRoot(t)
	before := nsbench.Leftovers()
	out := t.TempDir()
	code, stdout, stderr := runInProcess("selfcheck", "--pairs", "6", "--duration", "1s", "--out", out)
	b, err := os.ReadFile(filepath.Join(out, results.SelfCheckFile))
	if err != nil {
		t.Fatalf("exit %d, no document: %v\nstdout: %s\nstderr: %s", code, err, stdout, stderr)
	}
	var c results.SelfCheck
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	t.Logf("selfcheck:\n%s", stdout)
	want := map[string]int{results.VerdictPass: exitOK, results.VerdictFail: exitFailed, results.VerdictInconclusive: exitInconclusive}[c.Verdict]
	if code != want {
		t.Errorf("verdict %q but exit %d, want %d", c.Verdict, code, want)
	}
	if len(c.Checks) != 2 || c.Checks[0].Instrument != "iperf3-1" || c.Checks[1].Instrument != "tcp_rr" {
		t.Fatalf("checks: %+v", c.Checks)
	}
	for _, r := range c.Checks {
		if len(r.Harness) != 6 || len(r.Direct) != 6 || len(r.Ratios) != 6 {
			t.Errorf("%s: %d/%d/%d values, want 6 pairs", r.Instrument, len(r.Harness), len(r.Direct), len(r.Ratios))
			continue
		}
		for i := range r.Harness {
			if r.Harness[i] <= 0 || r.Direct[i] <= 0 || r.Ratios[i] != r.Harness[i]/r.Direct[i] {
				t.Errorf("%s pair %d: harness %v direct %v ratio %v", r.Instrument, i+1, r.Harness[i], r.Direct[i], r.Ratios[i])
			}
		}
		// Six pairs give the narrowest 95 % interval there is: [min, max].
		if r.CILevel < 0.95 || r.CILow > r.Ratio || r.CIHigh < r.Ratio {
			t.Errorf("%s: ratio %.3f interval %.3f–%.3f at %.3f", r.Instrument, r.Ratio, r.CILow, r.CIHigh, r.CILevel)
		}
		if !strings.Contains(stdout, r.Instrument) {
			t.Errorf("output lacks %s", r.Instrument)
		}
	}
	if !strings.Contains(stdout, "verdict: "+c.Verdict) {
		t.Errorf("output lacks the verdict:\n%s", stdout)
	}
	if left := nsbench.Leftovers(); len(left) > len(before) {
		t.Errorf("left behind: %v", left)
	}
}
