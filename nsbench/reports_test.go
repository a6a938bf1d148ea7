package nsbench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

func roundTripDoc() *results.Document {
	p50, p99 := 29.0, 75.0
	payload, wire := int64(64<<20), int64(70<<20)
	return &results.Document{
		SchemaVersion: results.SchemaVersion,
		Env:           results.Env{Generated: "2026-09-01T10:00:00Z", Kernel: "6.12.0-test", Runs: 2, WAN: "off", Harness: "twnsbench test"},
		Timings:       &results.Timings{TopologyUpSec: 0.5},
		Transports:    []results.Transport{{Name: "ssh", Label: "Pure SSH"}},
		Conditions:    []results.Condition{{Name: "lan", Label: "LAN (0 ms RTT, no loss)", ScpPayloadBytes: payload}},
		Samples: []results.Sample{
			{Transport: "ssh", Condition: "lan", Instrument: "iperf3-1", Run: 1, WallSec: 2, Value: 3.5, HostCPUSec: 3,
				RoleCPUSec: map[string]float64{"client": 1, "server": 1.5}},
			{Transport: "ssh", Condition: "lan", Instrument: "tcp_rr", Run: 1, WallSec: 2, Value: 30000.5, P50Us: &p50, P99Us: &p99,
				RoleCPUSec: map[string]float64{}, Extra: map[string]float64{}},
			{Transport: "ssh", Condition: "lan", Instrument: "scp", Run: 1, WallSec: 0.2, Value: 335.5, PayloadBytes: &payload,
				WireBytes: &wire, RoleCPUSec: map[string]float64{"client": 0.1, "server": 0.2, "relay": 0}},
		},
		// A tool's message with invalid UTF-8: JSON stores it as U+FFFD.
		Diagnostics: []results.Diagnostic{{Transport: "ssh", Condition: "lan", Name: "tool output", Output: "bad byte \xff here\n"}},
		Failures:    []results.Failure{{Transport: "ssh", Condition: "lan", Instrument: "scp", Run: 2, Error: "scp: \xfe\xff"}},
	}
}

// The run renders its reports from the document as saved, so rendering
// the saved JSON again (what `twnsbench report` does) gives the same bytes,
// even for content JSON does not keep as it was in memory.
func TestRunReportsRenderFromSavedDocument(t *testing.T) {
	dir := t.TempDir()
	doc := roundTripDoc()
	r := &runner{plan: &Plan{Options: Options{OutDir: dir}}, rec: newRecorder(doc, dir)}
	if err := r.rec.save(); err != nil {
		t.Fatal(err)
	}
	if err := r.writeReports(true); err != nil {
		t.Fatal(err)
	}
	back, err := results.Read(filepath.Join(dir, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{
		ReportFile:           report.Markdown(back),
		report.ChartFile:     report.Chart(back, report.Light),
		report.ChartDarkFile: report.Chart(back, report.Dark),
		report.HTMLFile:      report.HTML(back),
	}
	for _, f := range report.Files(back) {
		if f.Body != nil {
			want[f.Name] = f.Body
		} else if _, err := os.Stat(filepath.Join(dir, f.Name)); err == nil {
			t.Errorf("%s written though the document has nothing for it", f.Name)
		}
	}
	for name, want := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s written by the run differs from a render of the saved JSON", name)
		}
	}
	// The in-memory document would not have given the same report: the
	// read-back is what makes the bytes equal.
	if bytes.Equal(report.Markdown(doc), report.Markdown(back)) {
		t.Error("test document renders the same before and after JSON: it no longer tests the read-back")
	}
}

// Without a saved document (the last save failed), the run still writes
// reports, from memory.
func TestRunReportsWithoutSavedDocument(t *testing.T) {
	dir := t.TempDir()
	doc := roundTripDoc()
	r := &runner{plan: &Plan{Options: Options{OutDir: dir}}, rec: newRecorder(doc, dir)}
	if err := r.writeReports(false); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil || !bytes.Equal(got, report.Markdown(doc)) {
		t.Errorf("report from memory: %v", err)
	}
}

// A chart the document has nothing for is not written, and the file an
// earlier render left under its name is removed: the directory never
// shows another run's picture.
func TestWriteReportsRemovesStaleChart(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, report.TimeSeriesFile)
	if err := os.WriteFile(stale, []byte("<svg/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths, err := WriteReports(dir, roundTripDoc())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("%s of an earlier render survived a document without series", stale)
	}
	for _, p := range paths {
		if filepath.Base(p) == report.TimeSeriesFile {
			t.Errorf("WriteReports reports %s as written", p)
		}
	}
	for _, name := range []string{report.HTMLFile, report.MetricsChartFile, report.LatencyCDFFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
