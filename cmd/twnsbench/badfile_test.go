package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// badFiles are files the readers cannot read, by what is wrong with them.
var badFiles = map[string]string{
	"truncated":      `{"schema_version": 1, "transports": [{"name": "ssh"}], "samples": [{"transport": "ssh", "run"`,
	"not JSON":       "\x00\x01\x7fELF\n\x1b]0;title\x07",
	"an array":       `[{"transport": "ssh"}]`,
	"wrong types":    `{"transports": "ssh", "samples": {"run": "one"}}`,
	"no cells":       `{"schema_version": 1, "env": {"kernel": "6.1"}}`,
	"a newer schema": `{"schema_version": 999999, "transports": [{"name": "ssh"}]}`,
	"empty":          ``,
	"a bad sweep":    `{"counts": [1], "rows": [{"n": "one"}]}`,
}

// Every command that reads a results file refuses one it cannot read:
// exit 2, one line on stderr naming the command, nothing on stdout and
// nothing written.
func TestReadersRefuseBadFiles(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	for what, body := range badFiles {
		bad := filepath.Join(dir, strings.ReplaceAll(what, " ", "-")+".json")
		if err := os.WriteFile(bad, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		hist := filepath.Join(dir, "history-"+strings.ReplaceAll(what, " ", "-"))
		if err := os.Mkdir(hist, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hist, "0123456789abcdef.jsonl"), []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"report", "--in", bad, "--out", out},
			{"compare", bad, referenceJSON},
			{"compare", referenceJSON, bad},
			{"rerun", bad, "--out", out},
			{"history", "--dir", hist, "--out", out},
		} {
			code, stdout, stderr := runInProcess(args...)
			if code != exitRefused || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "twnsbench: "+args[0]+": ") || stdout != "" {
				t.Errorf("%s file, %v: exit %d, stderr %q, stdout %q: want exit %d and one line 'twnsbench: %s: …'",
					what, args, code, stderr, stdout, exitRefused, args[0])
			}
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused command created its --out")
	}
}

// A renderer's panic on a file is a refusal of the file (exit 2, one
// line), not a crash with a stack trace; a command's own error passes.
func TestRefuseOnPanic(t *testing.T) {
	render := func(doc []float64) (err error) {
		defer refuseOnPanic(&err, "report")
		_ = doc[len(doc)] // what an index the file names does to a renderer
		return nil
	}
	err := render(nil)
	if code := exitCode(err); code != exitRefused || !strings.HasPrefix(oneLine(err), "report: cannot read or render the file given: runtime error: index out of range") {
		t.Errorf("exit %d, error %v: want %d and the panic as one line", code, err, exitRefused)
	}
	failed := errors.New("write report: disk full")
	err = func() (err error) { defer refuseOnPanic(&err, "report"); return failed }()
	if err != failed {
		t.Errorf("error %v: want the command's own error", err)
	}
}
