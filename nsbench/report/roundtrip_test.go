package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// Rendering is a function of the document's JSON alone: write a document,
// render it, save it, read it back and render again — the same bytes.
// That is what lets `twnsbench report` reproduce a run's report.
func TestRenderSurvivesJSONRoundTrip(t *testing.T) {
	d := twnsbenchDoc()
	d.Cells = results.Cells(d)
	md, light, dark := Markdown(d), Chart(d, Light), Chart(d, Dark)

	path := filepath.Join(t.TempDir(), results.FileName)
	if err := results.WriteAtomic(path, d); err != nil {
		t.Fatal(err)
	}
	back, err := results.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := Markdown(back); !bytes.Equal(got, md) {
		t.Errorf("Markdown differs after a JSON round trip:\n%s", firstLineDiff(got, md))
	}
	if !bytes.Equal(Chart(back, Light), light) || !bytes.Equal(Chart(back, Dark), dark) {
		t.Error("chart differs after a JSON round trip")
	}
}

// A document written before env.facts, with its versions at the top of env
// (env.tw, env.openssh, …) as tw's reader has them, renders the same
// report: the Environment reads them from there.
func TestRenderReadsEnvBeforeFacts(t *testing.T) {
	d := twnsbenchDoc()
	md := Markdown(d)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	env := raw["env"].(map[string]any)
	if _, ok := env["facts"]; !ok || env["tw"] != "tw version v3.0.0" {
		t.Fatalf("env as written: %v", env)
	}
	delete(env, "facts")
	path := filepath.Join(t.TempDir(), results.FileName)
	b, _ = json.Marshal(raw)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	old, err := results.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := Markdown(old); !bytes.Equal(got, md) {
		t.Errorf("an env without facts renders otherwise:\n%s", firstLineDiff(got, md))
	}
}
