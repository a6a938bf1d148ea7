package ci

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/report/textfmt"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/verdict"
)

// The A/B verdict's files in a run's output directory, beside the report:
// what a CI job uploads or hands to its test-report and benchmark tools.
const (
	StepSummaryFile = "verdict-summary.md" // what a GitHub job appends to $GITHUB_STEP_SUMMARY
	JUnitFile       = "verdict-junit.xml"
	BMFFile         = "verdict-bmf.json"
)

// VerdictFiles renders d's recorded A/B verdicts in their CI forms: the step
// summary, JUnit XML, Bencher's metric format and github-action-benchmark's
// files (one per direction some cell has). Without verdicts every name
// comes with a nil body, so that a render removes another run's file of
// that name.
func VerdictFiles(d *results.Document) ([]textfmt.File, error) {
	files := []textfmt.File{{Name: StepSummaryFile}, {Name: JUnitFile}, {Name: BMFFile}}
	for _, f := range ActionBenchmarkFiles {
		files = append(files, textfmt.File{Name: f.File})
	}
	if d.Verdicts == nil || len(d.Verdicts.Cells) == 0 {
		return files, nil
	}
	rs := d.Verdicts.Cells
	var b bytes.Buffer
	if err := WriteStepSummary(&b, rs, ABRunOf(d)); err != nil {
		return nil, err
	}
	files[0].Body = bytes.Clone(b.Bytes())
	for i, write := range []func(*bytes.Buffer) error{
		func(w *bytes.Buffer) error { return WriteJUnit(w, rs) },
		func(w *bytes.Buffer) error { return WriteBMF(w, rs) },
	} {
		b.Reset()
		if err := write(&b); err != nil {
			return nil, err
		}
		files[1+i].Body = bytes.Clone(b.Bytes())
	}
	for i, f := range ActionBenchmarkFiles {
		if !hasDirection(rs, f.Better) {
			continue
		}
		b.Reset()
		if err := WriteActionBenchmark(&b, rs, f.Better); err != nil {
			return nil, err
		}
		files[3+i].Body = bytes.Clone(b.Bytes())
	}
	return files, nil
}

// ABRunOf is what the step summary says of d's run beside the verdicts:
// the two builds' rows, the thresholds, each build's programs (version and
// SHA-256) and the environment the pairs were measured in.
func ABRunOf(d *results.Document) ABRun {
	run := ABRun{}
	if v := d.Verdicts; v != nil {
		run.Options = verdict.Options{MinEffect: v.MinEffect, Alpha: v.Alpha}
		var as, bs []string
		for _, c := range v.Cells {
			as, bs = appendNew(as, c.A), appendNew(bs, c.B)
		}
		run.A, run.B = strings.Join(as, ", "), strings.Join(bs, ", ")
	}
	for _, t := range d.Transports {
		if t.Build == nil {
			continue
		}
		for _, p := range t.Build.Programs {
			value := p.Version
			if value == "" {
				value = "version not reported"
			}
			run.Versions = append(run.Versions, results.Fact{Key: t.Name + " " + p.Option,
				Value: fmt.Sprintf("%s (%s, SHA-256 %s)", value, p.Path, p.SHA256)})
			for _, c := range p.Hosts {
				run.Versions = append(run.Versions, results.Fact{Key: t.Name + " " + p.Option + " on the " + c.Role + "'s host",
					Value: fmt.Sprintf("%s (%s on %s, SHA-256 %s)", cmp.Or(c.Version, "version not read"), c.Path, c.Host, c.SHA256)})
			}
		}
	}
	e := d.Env
	run.Environment = append(run.Environment,
		results.Fact{Key: "kernel", Value: e.Kernel},
		results.Fact{Key: "CPU", Value: fmt.Sprintf("%s, %d cores", e.CPUModel, e.Cores)})
	run.Environment = append(run.Environment, e.Facts...)
	if e.Harness != "" {
		run.Environment = append(run.Environment, results.Fact{Key: "twnsbench", Value: e.Harness})
	}
	return run
}

// appendNew appends s unless xs has it already.
func appendNew(xs []string, s string) []string {
	if slices.Contains(xs, s) {
		return xs
	}
	return append(xs, s)
}
