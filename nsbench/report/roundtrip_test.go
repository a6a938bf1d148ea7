package report

import (
	"bytes"
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
