package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v4"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/report/ci"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// The CI examples docs/ci.md shows, for users' repositories.
const (
	githubExample = "../../docs/examples/github-ab.yml"
	gitlabExample = "../../docs/examples/gitlab-ab.yml"
)

func readExample(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parseExample parses a YAML file into a tree of maps, lists and scalars.
func parseExample(t *testing.T, path string) any {
	t.Helper()
	var tree any
	if err := yaml.Unmarshal(readExample(t, path), &tree); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tree
}

// scalars are every string in a parsed YAML tree, shell line
// continuations joined.
func scalars(tree any) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, strings.ReplaceAll(v, "\\\n", " "))
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(tree)
	return out
}

func TestGitHubExampleLints(t *testing.T) {
	for _, e := range lintWorkflow(t, "github-ab.yml", readExample(t, githubExample)) {
		t.Errorf("%s:%d:%d: %s [%s]", githubExample, e.Line, e.Column, e.Message, e.Kind)
	}
}

// The GitLab job keeps the JUnit verdicts where the run writes them, and
// lets exit 3 (undecided) pass as a warning.
func TestGitLabExampleShape(t *testing.T) {
	tree, _ := parseExample(t, gitlabExample).(map[string]any)
	job, _ := tree["tunnel-ab"].(map[string]any)
	if job == nil {
		t.Fatalf("%s has no job tunnel-ab", gitlabExample)
	}
	if s, _ := job["script"].([]any); len(s) == 0 {
		t.Error("the job has no script")
	}
	art, _ := job["artifacts"].(map[string]any)
	reports, _ := art["reports"].(map[string]any)
	if got, want := reports["junit"], "results/ab/"+ci.JUnitFile; got != want {
		t.Errorf("artifacts.reports.junit %v, want %s", got, want)
	}
	allow, _ := job["allow_failure"].(map[string]any)
	if codes, _ := allow["exit_codes"].([]any); !slices.Contains(codes, any(exitInconclusive)) {
		t.Errorf("allow_failure.exit_codes %v, want %d (undecided) in it", allow["exit_codes"], exitInconclusive)
	}
}

// Every twnsbench command line of the examples uses only commands and
// flags twnsbench has, and instruments and transports it knows: the docs
// cannot drift from the CLI.
func TestCIExamplesUseRealFlags(t *testing.T) {
	flags := commandFlags()
	line := regexp.MustCompile(`bin/twnsbench"? (\w+)([^\n]*)`)
	for _, path := range []string{githubExample, gitlabExample} {
		found := 0
		for _, s := range scalars(parseExample(t, path)) {
			for _, m := range line.FindAllStringSubmatch(s, -1) {
				found++
				cmd, words := m[1], strings.Fields(m[2])
				if flags[cmd] == nil {
					t.Errorf("%s runs unknown command %q", filepath.Base(path), cmd)
					continue
				}
				for i, w := range words {
					name, isFlag := strings.CutPrefix(w, "--")
					if !isFlag {
						continue
					}
					name, _, _ = strings.Cut(name, "=")
					if !flags[cmd][name] {
						t.Errorf("%s passes unknown flag --%s to %s", filepath.Base(path), name, cmd)
					}
					if i+1 < len(words) {
						checkValue(t, filepath.Base(path), name, words[i+1])
					}
				}
			}
		}
		if found == 0 {
			t.Errorf("%s: no twnsbench command line found", path)
		}
	}
}

// checkValue checks the instruments and transports an example names.
func checkValue(t *testing.T, file, flag, value string) {
	switch flag {
	case "instruments":
		for _, in := range strings.Split(value, ",") {
			if !slices.Contains(instrument.Names(), in) {
				t.Errorf("%s: --instruments names %q, not an instrument (%v)", file, in, instrument.Names())
			}
		}
	case "transports":
		for _, tr := range strings.Split(value, ",") {
			name, _, _ := strings.Cut(tr, "@")
			name, _, _ = strings.Cut(name, ":")
			if !slices.Contains(transport.Names(), name) {
				t.Errorf("%s: --transports names %q, not a transport", file, name)
			}
		}
	}
}

// docs/ci.md shows each example whole, as the file is.
func TestCIDocShowsTheExamples(t *testing.T) {
	doc := string(readExample(t, "../../docs/ci.md"))
	for _, path := range []string{githubExample, gitlabExample} {
		if !strings.Contains(doc, "```yaml\n"+string(readExample(t, path))+"```\n") {
			t.Errorf("docs/ci.md does not show %s as it is", path)
		}
	}
}
