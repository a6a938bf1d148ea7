package nsbench

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// WriteReports renders d into dir: the Markdown report and the light and
// dark charts it links to. It returns the paths written. A run calls it at
// its end and `twnsbench report` on a saved results document; both render
// from nothing but the document, so both give the same bytes.
func WriteReports(dir string, d *results.Document) ([]string, error) {
	files := []struct {
		name string
		body []byte
	}{
		{ReportFile, report.Markdown(d)},
		{report.ChartFile, report.Chart(d, report.Light)},
		{report.ChartDarkFile, report.Chart(d, report.Dark)},
	}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.body, 0o644); err != nil {
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
	d := r.doc
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
