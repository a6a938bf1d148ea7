package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
)

// benchWorkflow is the example workflow for users' repositories.
const benchWorkflow = "../../.github/workflows/bench.yml"

// lintWorkflow runs actionlint, the standard linter for GitHub Actions
// workflows, as a library: no network, no external tools (its optional
// shellcheck and pyflakes passes stay off so the result does not depend on
// what this host has installed).
func lintWorkflow(t *testing.T, name string, content []byte) []*actionlint.Error {
	t.Helper()
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A name that is not a file: actionlint then looks for no project
	// configuration around it.
	errs, err := l.Lint(name, content, nil)
	if err != nil {
		t.Fatalf("actionlint on %s: %v", name, err)
	}
	return errs
}

func readWorkflow(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(benchWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBenchWorkflowLints(t *testing.T) {
	for _, e := range lintWorkflow(t, "bench.yml", readWorkflow(t)) {
		t.Errorf("%s:%d:%d: %s [%s]", benchWorkflow, e.Line, e.Column, e.Message, e.Kind)
	}
}

// The linter in this test must catch a broken workflow, or a pass above
// proves nothing: each copy below breaks bench.yml in one way.
func TestBrokenWorkflowFailsLint(t *testing.T) {
	good := string(readWorkflow(t))
	for name, edit := range map[string][2]string{
		"no runner":          {"    runs-on: ubuntu-latest\n", ""},
		"unknown action key": {"go-version-file: go.mod", "go-version-fil: go.mod"},
		"bad expression":     {"${{ inputs.args }}", "${{ inputs.args "},
		"undefined input":    {"${{ inputs.args }}", "${{ inputs.nope }}"},
		"unknown step key":   {"      - name: Build\n        run: make build", "      - name: Build\n        runs: make build"},
		"unknown event":      {"  workflow_dispatch:\n", "  workflow_dispatched:\n"},
	} {
		broken := strings.Replace(good, edit[0], edit[1], 1)
		if broken == good {
			t.Errorf("%s: %q is not in %s; update this test", name, edit[0], benchWorkflow)
			continue
		}
		if errs := lintWorkflow(t, "broken.yml", []byte(broken)); len(errs) == 0 {
			t.Errorf("%s: actionlint found nothing wrong", name)
		}
	}
}

// The workflow's twnsbench command lines use only flags the commands have,
// so the example cannot drift from the CLI.
func TestBenchWorkflowUsesRealFlags(t *testing.T) {
	flags := commandFlags()
	line := regexp.MustCompile(`bin/twnsbench (\w+)([^\n]*)`)
	found := 0
	for _, m := range line.FindAllStringSubmatch(string(readWorkflow(t)), -1) {
		found++
		cmd, rest := m[1], m[2]
		known, ok := flags[cmd]
		if !ok {
			t.Errorf("workflow runs unknown command %q", cmd)
			continue
		}
		for _, w := range strings.Fields(rest) {
			if name, isFlag := strings.CutPrefix(w, "--"); isFlag && !known[name] {
				t.Errorf("workflow passes unknown flag %s to %s", w, cmd)
			}
		}
	}
	if found < 2 {
		t.Errorf("found %d twnsbench command lines in %s, want doctor and run", found, filepath.Base(benchWorkflow))
	}
}

// commandFlags are the names of every flag of every command, by command:
// what an example's command line may use.
func commandFlags() map[string]map[string]bool {
	flags := map[string]map[string]bool{}
	for _, c := range newApp(io.Discard, io.Discard).Commands {
		flags[c.Name] = map[string]bool{}
		for _, f := range c.Flags {
			for _, n := range f.Names() {
				flags[c.Name][n] = true
			}
		}
	}
	return flags
}
