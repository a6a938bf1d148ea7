package nsbench

import (
	"fmt"
	"path/filepath"

	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/report/ci"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/safedir"
)

// WriteReports renders d into dir: the Markdown report, the charts in
// light and dark (the key results, every metric, the time series and the
// latency distributions), the one-page HTML report and, for a run of two
// builds, the verdict's CI files (ci.VerdictFiles). It returns the paths
// written. A chart the document has nothing for is not written, and a file
// of its name left by an earlier render is removed, so the directory never
// shows another run's picture. A run calls it at its end and `twnsbench
// report` on a saved results document; both render from nothing but the
// document, so both give the same bytes.
func WriteReports(dir string, d *results.Document) ([]string, error) {
	files := append([]report.File{{Name: ReportFile, Body: report.Markdown(d)}}, report.Files(d)...)
	verdicts, err := ci.VerdictFiles(d)
	if err != nil {
		return nil, fmt.Errorf("render the verdict's CI files: %w", err)
	}
	return writeFiles(dir, append(files, verdicts...))
}

// WriteClientsReports renders a many-client sweep into dir as
// WriteReports does a run: its Markdown, its chart in light and dark and
// its HTML page (report.ClientsFiles). `run --clients` calls it at its
// end and `twnsbench report` on a saved clients-results.json, with the
// same bytes.
func WriteClientsReports(dir string, c *results.Clients) ([]string, error) {
	return writeFiles(dir, report.ClientsFiles(c))
}

// writeFiles writes each file into dir and removes those with no body,
// through dir opened as a safedir.Dir: a link planted at a report's name is
// replaced, never followed.
func writeFiles(dir string, files []report.File) ([]string, error) {
	d, err := safedir.Open("output directory", dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var paths []string
	for _, f := range files {
		if f.Body == nil {
			if err := d.Remove(f.Name); err != nil {
				return paths, fmt.Errorf("remove stale report file: %w", err)
			}
			continue
		}
		if err := d.WriteFile(f.Name, f.Body, 0o644); err != nil {
			return paths, fmt.Errorf("write report: %w", err)
		}
		paths = append(paths, filepath.Join(dir, f.Name))
	}
	return paths, nil
}

// ReportFile is the Markdown report's name inside the output directory.
const ReportFile = "bench-report.md"
