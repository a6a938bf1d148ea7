package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
)

func TestVerificationOutcome(t *testing.T) {
	o := nsbench.Defaults()
	o.OutDir = t.TempDir()
	plan, err := nsbench.NewPlan(o, []string{"ssh"})
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	c := cli.NewContext(&cli.App{ErrWriter: &stderr}, flag.NewFlagSet("run", flag.ContinueOnError), nil)

	if err := verificationOutcome(c, plan, &nsbench.Result{}); err != nil || stderr.Len() > 0 {
		t.Errorf("all verified: %v, %q", err, stderr.String())
	}
	// Without --strict: a warning line, and the run still succeeds.
	if err := verificationOutcome(c, plan, &nsbench.Result{Unverified: 1}); err != nil {
		t.Errorf("not strict: %v", err)
	}
	if got := stderr.String(); !strings.HasPrefix(got, "twnsbench: warning: 1 WAN cell(s) failed verification") ||
		!strings.Contains(got, "--strict") || strings.Count(got, "\n") != 1 {
		t.Errorf("warning = %q", got)
	}
	// With --strict: an error (exit 1).
	plan.Strict = true
	err = verificationOutcome(c, plan, &nsbench.Result{Unverified: 2})
	if err == nil || !strings.Contains(err.Error(), "2 WAN cell(s) failed verification") || !strings.Contains(err.Error(), "30ms:0.1%") {
		t.Errorf("strict: %v", err)
	}
}

func TestWANFlagsRefused(t *testing.T) {
	cases := [][]string{
		{"run", "--seed", "-1"},
		{"run", "--seed", "x"},
		{"run", "--impairment", "tc"},
	}
	if ok, _ := preflight.KernelFeature("netem"); !ok {
		cases = append(cases, []string{"run", "--impairment", "netem"}) // refused before anything exists
	}
	for _, args := range cases {
		code, _, stderr := runInProcess(append(args, "--out", t.TempDir())...)
		if code != exitRefused || !strings.HasPrefix(stderr, "twnsbench: --") {
			t.Errorf("%v: exit %d, stderr %q; want a refusal naming the flag", args, code, stderr)
		}
	}
}
