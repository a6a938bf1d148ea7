package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/report/ci"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// buildWireGuardGo builds wireguard-go's own program at the version in
// go.mod into a temporary directory: a real program for both builds.
func buildWireGuardGo(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wireguard-go")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "golang.zx2c4.com/wireguard")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build wireguard-go: %v\n%s", err, out)
	}
	return bin
}

// TestBuildsAA runs the same wireguard-go program as both builds (A/A)
// with iperf3-1, tcp_rr and the time to ready, 1 s samples: both rows exist with their
// label, the program's version and SHA-256; every cell has a verdict and
// none says slower; the exit code follows the verdicts of the cells
// --fail-on selects (3 when one is undecided, else 0, never 1).
func TestBuildsAA(t *testing.T) {
	nstest.RequireRoot(t)
	wgGo := buildWireGuardGo(t)
	out := t.TempDir()
	// As a GitHub Actions job: annotations on stdout, the summary appended
	// to the file the runner names.
	summary := filepath.Join(t.TempDir(), "step-summary.md")
	if err := os.WriteFile(summary, []byte("earlier step\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	doc, code, stdout, stderr := runTwoBuilds(t, out, [2]string{"a", "b"}, [2]string{wgGo, wgGo},
		"--instruments", "iperf3-1,tcp_rr,ready", "--duration", "1s", "--warmup", "0", "--runs", "2", "--max-rounds", "3")
	sha := regexp.MustCompile(`^[0-9a-f]{64}$`)
	var sum string
	for _, row := range []string{"wireguard-go@a", "wireguard-go@b"} {
		tr, ok := doc.TransportOf(row)
		if !ok || tr.Build == nil {
			t.Fatalf("row %s missing or without its build (transports %+v)", row, doc.Transports)
		}
		label := strings.TrimPrefix(row, "wireguard-go@")
		if tr.Build.Label != label || len(tr.Build.Programs) != 1 {
			t.Fatalf("%s build %+v", row, tr.Build)
		}
		p := tr.Build.Programs[0]
		if p.Option != "wireguard-go" || p.Path != wgGo || !sha.MatchString(p.SHA256) || !strings.HasPrefix(p.Version, "golang.zx2c4.com/wireguard v") {
			t.Errorf("%s program %+v: want wireguard-go at %s with a version and a SHA-256", row, p, wgGo)
		}
		if sum != "" && p.SHA256 != sum {
			t.Errorf("the same program hashed %s and %s", sum, p.SHA256)
		}
		sum = p.SHA256
		n := 0
		for _, s := range doc.Samples {
			if s.Transport == row && s.Condition == results.LAN {
				n++
			}
		}
		if n < 6 {
			t.Errorf("%s has %d LAN samples, want 3 rounds of 2 instruments at least", row, n)
		}
	}
	v := doc.Verdicts
	if v == nil || v.Order != "ABBA" || len(v.Cells) == 0 {
		t.Fatalf("verdicts %+v", v)
	}
	counted := 0
	seen := map[string]bool{}
	for _, c := range v.Cells {
		seen[c.Instrument+"/"+c.Metric] = true
		if c.A != "wireguard-go@a" || c.B != "wireguard-go@b" {
			t.Errorf("cell %+v: want A wireguard-go@a and B wireguard-go@b", c.VerdictCell)
		}
		// A value is never 0 here: every round paired it (retransmits
		// can be 0, which a ratio leaves out).
		if c.Metric == "value" && c.Pairs < 3 {
			t.Errorf("%s/value: %d pairs, want one per round (at least 3)", c.Instrument, c.Pairs)
		}
		t.Logf("%s/%s: %s, %d pairs (%s)", c.Instrument, c.Metric, c.Verdict, c.Pairs, c.Reason)
		switch c.Verdict {
		case "slower":
			t.Errorf("A/A: %s/%s is slower", c.Instrument, c.Metric)
		case "faster", "no change", "undecided":
		default:
			t.Errorf("%s/%s: verdict %q", c.Instrument, c.Metric, c.Verdict)
		}
		if c.Counts != (c.Metric == "value") {
			t.Errorf("%s/%s counts %v: the default --fail-on is every cell's value", c.Instrument, c.Metric, c.Counts)
		}
		if c.Counts {
			counted++
		}
	}
	// Each round brings each build's path up: the time to ready pairs
	// like the other instruments (once per run, it could never decide).
	if !seen["iperf3-1/value"] || !seen["tcp_rr/value"] || !seen["ready/value"] || counted != 3 {
		t.Errorf("verdict cells %v (%d counted): want iperf3-1/value, tcp_rr/value and ready/value counted", seen, counted)
	}
	if want := verdictExit(doc); code != want {
		t.Errorf("exit %d, want %d from the counted verdicts\nstdout: %s\nstderr: %s", code, want, stdout, stderr)
	}
	if !strings.Contains(stdout, "verdict: wireguard-go@b vs wireguard-go@a, lan / iperf3-1 / value: ") {
		t.Errorf("stdout lacks the verdict lines: %s", stdout)
	}
	checkCIForms(t, doc, out, summary, stdout)
}

// checkCIForms checks the verdict's CI forms of an A/A run: an annotation
// per undecided cell and none as an error, the summary appended after the
// earlier step's text and also in the output directory, one JUnit test
// case per cell, and Bencher's format naming every cell.
func checkCIForms(t *testing.T, doc *results.Document, out, summary, stdout string) {
	t.Helper()
	undecided := 0
	for _, c := range doc.Verdicts.Cells {
		if c.Verdict == "undecided" {
			undecided++
		}
	}
	if n := strings.Count(stdout, "::warning "); n != undecided || strings.Contains(stdout, "::error ") {
		t.Errorf("%d ::warning annotations for %d undecided cells (and errors: %v)", n, undecided, strings.Contains(stdout, "::error "))
	}
	got, err := os.ReadFile(summary)
	if err != nil || !strings.HasPrefix(string(got), "earlier step\n## A/B verdict: wireguard-go@a (A) against wireguard-go@b (B)") {
		t.Errorf("step summary (%v): %.200q", err, got)
	}
	inDir, err := os.ReadFile(filepath.Join(out, ci.StepSummaryFile))
	if err != nil || !strings.HasSuffix(string(got), string(inDir)) {
		t.Errorf("%s (%v) is not the summary appended", ci.StepSummaryFile, err)
	}
	var suite struct {
		Cases []struct {
			Name string `xml:"name,attr"`
		} `xml:"testcase"`
	}
	if b, err := os.ReadFile(filepath.Join(out, ci.JUnitFile)); err != nil || xml.Unmarshal(b, &suite) != nil || len(suite.Cases) != len(doc.Verdicts.Cells) {
		t.Errorf("%s: %v, %d test cases for %d cells", ci.JUnitFile, err, len(suite.Cases), len(doc.Verdicts.Cells))
	}
	var bmf map[string]map[string]any
	if b, err := os.ReadFile(filepath.Join(out, ci.BMFFile)); err != nil || json.Unmarshal(b, &bmf) != nil || len(bmf) == 0 {
		t.Errorf("%s: %v, %d benchmarks", ci.BMFFile, err, len(bmf))
	}
	for name := range bmf {
		if !strings.HasPrefix(name, "wireguard-go/lan/") {
			t.Errorf("BMF benchmark %q: want wireguard-go/lan/…", name)
		}
	}
	// The document alone renders the same CI files: the verdict is
	// recorded with what they show, never decided again.
	again := t.TempDir()
	if code, _, stderr := runInProcess("report", "--in", filepath.Join(out, results.FileName), "--out", again); code != exitOK {
		t.Fatalf("report from the JSON: exit %d: %s", code, stderr)
	}
	for _, name := range []string{ci.StepSummaryFile, ci.JUnitFile, ci.BMFFile, ci.ActionBenchmarkFiles[0].File} {
		ran, err1 := os.ReadFile(filepath.Join(out, name))
		rendered, err2 := os.ReadFile(filepath.Join(again, name))
		if err1 != nil || err2 != nil || !bytes.Equal(ran, rendered) {
			t.Errorf("%s rendered from the JSON differs from the run's (%v, %v)", name, err1, err2)
		}
	}
}

// verdictExit is the exit code a run of builds calls for: 1 when a
// counted verdict is slower, else 4 when samples failed, else 3 when one
// is undecided or none counts, else 0.
func verdictExit(doc *results.Document) int {
	code, counted := exitOK, 0
	for _, c := range doc.Verdicts.Cells {
		if !c.Counts {
			continue
		}
		counted++
		switch c.Verdict {
		case "slower":
			return exitFailed
		case "undecided":
			code = exitInconclusive
		}
	}
	switch {
	case len(doc.Failures) > 0:
		return exitSamplesFailed
	case counted == 0:
		return exitInconclusive
	}
	return code
}

// publishedWireGuardGo is an older published wireguard-go than go.mod's.
const publishedWireGuardGo = "golang.zx2c4.com/wireguard@v0.0.0-20230325221338-052af4a8072b"

// installPublishedWireGuardGo builds publishedWireGuardGo through the Go
// module proxy and returns the program's path.
func installPublishedWireGuardGo(t testing.TB) string {
	t.Helper()
	gobin := t.TempDir()
	install := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "install", publishedWireGuardGo)
	install.Env = append(os.Environ(), "GOBIN="+gobin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install %s: %v\n%s", publishedWireGuardGo, err, out)
	}
	return filepath.Join(gobin, "wireguard") // go install names it after the module's last element
}

// TestBuildsPublishedVersions runs two published versions of wireguard-go
// side by side, the older one fetched through the Go module proxy and
// built here (so it needs the network: set TWNSBENCH_NET_TESTS=1): each
// row carries its own version and SHA-256, both are measured in every
// round, and the exit code follows the counted verdicts.
func TestBuildsPublishedVersions(t *testing.T) {
	nstest.RequireRoot(t)
	if os.Getenv("TWNSBENCH_NET_TESTS") != "1" {
		t.Skip("fetches " + publishedWireGuardGo + " through the Go module proxy: set TWNSBENCH_NET_TESTS=1")
	}
	newer, older := buildWireGuardGo(t), installPublishedWireGuardGo(t)
	out := t.TempDir()
	doc, code, stdout, stderr := runTwoBuilds(t, out, [2]string{"old", "new"}, [2]string{older, newer},
		"--instruments", "iperf3-1,tcp_rr", "--duration", "1s", "--warmup", "0", "--runs", "6", "--max-rounds", "6", "--profile")
	_, wantOld, _ := strings.Cut(publishedWireGuardGo, "@")
	ps := map[string]results.BuildProgram{}
	for _, row := range []string{"wireguard-go@old", "wireguard-go@new"} {
		tr, ok := doc.TransportOf(row)
		if !ok || tr.Build == nil || len(tr.Build.Programs) != 1 {
			t.Fatalf("row %s missing or without its build", row)
		}
		ps[row] = tr.Build.Programs[0]
	}
	if !strings.HasSuffix(ps["wireguard-go@old"].Version, " "+wantOld) || strings.HasSuffix(ps["wireguard-go@new"].Version, " "+wantOld) {
		t.Errorf("versions old %q, new %q: want old at %s and new at go.mod's", ps["wireguard-go@old"].Version, ps["wireguard-go@new"].Version, wantOld)
	}
	if ps["wireguard-go@old"].SHA256 == ps["wireguard-go@new"].SHA256 {
		t.Error("two versions with one SHA-256")
	}
	if doc.Verdicts == nil {
		t.Fatal("no verdicts")
	}
	for _, c := range doc.Verdicts.Cells {
		t.Logf("%s/%s: %s, %d pairs (%s)", c.Instrument, c.Metric, c.Verdict, c.Pairs, c.Reason)
	}
	if want := verdictExit(doc); code != want {
		t.Errorf("exit %d, want %d from the counted verdicts\nstdout: %s\nstderr: %s", code, want, stdout, stderr)
	}
	// The profiles of the two versions name wireguard-go's own functions
	// whose share changed, with an interval that excludes no change (the
	// newer one checksums in tun.checksumNoFold, and batches through
	// conn.StdNetBind).
	if doc.Verdicts.CPUProfile == nil || len(doc.Verdicts.CPUProfile.Comparisons) != 1 {
		t.Fatalf("no profile comparison: %+v", doc.Verdicts.CPUProfile)
	}
	changed := 0
	for _, f := range doc.Verdicts.CPUProfile.Comparisons[0].Functions {
		c := f.Self
		if strings.HasPrefix(f.Name, "golang.zx2c4.com/wireguard/") && c.Lo != nil && c.Hi != nil && (*c.Lo > 0 || *c.Hi < 0) {
			t.Logf("%s: self %.2f %% → %.2f %% (%+.2f pp, %+.2f to %+.2f)", f.Name, f.SelfA, f.SelfB, *c.Delta, *c.Lo, *c.Hi)
			changed++
		}
	}
	if changed == 0 {
		t.Error("the profiles name no wireguard-go function whose share changed between the versions")
	}
}

// runTwoBuilds runs wireguard-go@LABEL for the two labels, each with its
// program, on the LAN with args, into out, and reads the document.
func runTwoBuilds(t testing.TB, out string, labels, bins [2]string, args ...string) (doc *results.Document, code int, stdout, stderr string) {
	t.Helper()
	run := []string{"run", "--transports", "wireguard-go@" + labels[0] + ",wireguard-go@" + labels[1],
		"--build", labels[0] + ":wireguard-go=" + bins[0], "--build", labels[1] + ":wireguard-go=" + bins[1],
		"--wan", "off", "--out", out}
	code, stdout, stderr = runInProcess(append(run, args...)...)
	doc, err := results.Read(filepath.Join(out, results.FileName))
	if err != nil {
		t.Fatalf("exit %d, no results: %v\nstderr: %s", code, err, stderr)
	}
	return doc, code, stdout, stderr
}
