package report

// The names the CI formats (verdict.go, verdict_formats.go) take in a
// run's output directory, as docs/ci.md and docs/examples/ name them
// (github-action-benchmark's two files: ActionBenchmarkFiles). The
// GitHub annotations go to stdout and the step summary to the file
// $GITHUB_STEP_SUMMARY names.
const (
	JUnitFile = "bench-junit.xml"
	BMFFile   = "bench-bmf.json"
)
