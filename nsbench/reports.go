package nsbench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// WriteReports renders d into dir: the Markdown report, the charts in
// light and dark (the key results, every metric, the time series and the
// latency distributions) and the one-page HTML report. It returns the paths
// written. A chart the document has nothing for is not written, and a file
// of its name left by an earlier render is removed, so the directory never
// shows another run's picture. A run calls it at its end and `twnsbench
// report` on a saved results document; both render from nothing but the
// document, so both give the same bytes.
func WriteReports(dir string, d *results.Document) ([]string, error) {
	files := append([]report.File{{Name: ReportFile, Body: report.Markdown(d)}}, report.Files(d)...)
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		if f.Body == nil {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return paths, fmt.Errorf("remove stale report file: %w", err)
			}
			continue
		}
		if err := os.WriteFile(p, f.Body, 0o644); err != nil {
			return paths, fmt.Errorf("write report: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// writeReports renders the reports from the results document as saved,
// read back from its file: what JSON does not keep (invalid UTF-8 in a
// tool's message becomes U+FFFD, for one) then cannot make the run's report
// differ from `twnsbench report` on the same file. When the last save
// failed, the document in memory is all there is.
func (r *runner) writeReports(saved bool) error {
	d := r.rec.doc
	if saved {
		back, err := results.Read(filepath.Join(r.plan.OutDir, results.FileName))
		if err != nil {
			return err
		}
		d = back
	}
	_, err := WriteReports(r.plan.OutDir, d)
	return err
}
