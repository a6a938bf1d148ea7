package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The system's OpenSSH programs, as Debian and Ubuntu install them.
const (
	systemSSH  = "/usr/bin/ssh"
	systemSSHD = "/usr/sbin/sshd"
)

// TestBuildsSSHD runs Pure SSH as an A/A of builds naming the system's
// OpenSSH explicitly: a with ssh= and sshd=, b with sshd= alone. Each row
// records its programs' paths, versions (-V) and SHA-256, each build's
// own sshd served its logins (its log has them), and no cell says slower.
func TestBuildsSSHD(t *testing.T) {
	nstest.RequireRoot(t)
	for _, p := range []string{systemSSH, systemSSHD} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("needs %s: %v", p, err)
		}
	}
	out := t.TempDir()
	code, stdout, stderr := runInProcess("run", "--transports", "ssh@a,ssh@b",
		"--build", "a:ssh="+systemSSH, "--build", "a:sshd="+systemSSHD, "--build", "b:sshd="+systemSSHD,
		"--instruments", "ssh_setup,scp", "--size", "16MiB", "--duration", "1s", "--warmup", "0",
		"--runs", "2", "--max-rounds", "3", "--wan", "off", "--out", out) // as TestBuildsAA: 2 rounds, then the verdict's one more
	doc, err := results.Read(filepath.Join(out, results.FileName))
	if err != nil {
		t.Fatalf("exit %d, no results: %v\nstderr: %s", code, err, stderr)
	}
	a := checkBuildPrograms(t, doc, "ssh@a", map[string]string{"ssh": systemSSH, "sshd": systemSSHD}, "OpenSSH_")
	b := checkBuildPrograms(t, doc, "ssh@b", map[string]string{"sshd": systemSSHD}, "OpenSSH_")
	if a["sshd"].SHA256 != b["sshd"].SHA256 || a["sshd"].Version != b["sshd"].Version {
		t.Errorf("one sshd recorded as %+v and %+v", a["sshd"], b["sshd"])
	}
	for _, label := range []string{"a", "b"} {
		logs, _ := filepath.Glob(filepath.Join(out, "logs", "*", "server-sshd-own@"+label+".log"))
		if len(logs) != 1 {
			t.Fatalf("build %s: its own sshd's log: %v, want one", label, logs)
		}
		b, _ := os.ReadFile(logs[0])
		if n := strings.Count(string(b), "Accepted publickey for bench"); n < 3 {
			t.Errorf("build %s: its own sshd accepted %d logins, want the rounds' logins and copies", label, n)
		}
	}
	checkAAVerdicts(t, doc, code, stdout, stderr, "ssh@a", "ssh@b", []string{"ssh_setup/value", "scp/value"})
}

// TestBuildsTW runs two builds of tw through the relay: both
// TWNSBENCH_TW (an A/A), or TWNSBENCH_TW_OLD (an older tw built from
// tw's history) against it. Each row records its tw's path, the version
// `tw --version` prints and the file's SHA-256; an A/A says no cell is
// slower; the exit code follows the verdicts.
func TestBuildsTW(t *testing.T) {
	nstest.RequireRoot(t)
	tw, caddy, xray := twBinaries(t)
	old := tw
	if o := os.Getenv("TWNSBENCH_TW_OLD"); o != "" {
		old = o
	}
	version := func(bin string) string {
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			t.Fatalf("%s --version: %v", bin, err)
		}
		return strings.TrimSpace(string(out))
	}
	out := t.TempDir()
	code, stdout, stderr := runInProcess("run", "--transports", "tw@old,tw@new",
		"--build", "old:tw="+old, "--build", "new:tw="+tw, "--caddy", caddy, "--xray", xray,
		"--instruments", "iperf3-1,tcp_rr", "--duration", "1s", "--warmup", "0", "--runs", "2", "--max-rounds", "3",
		"--wan", "off", "--out", out)
	doc, err := results.Read(filepath.Join(out, results.FileName))
	if err != nil {
		t.Fatalf("exit %d, no results: %v\nstderr: %s", code, err, stderr)
	}
	checkBuildPrograms(t, doc, "tw@old", map[string]string{"tw": old}, version(old))
	checkBuildPrograms(t, doc, "tw@new", map[string]string{"tw": tw}, version(tw))
	if old != tw {
		if want := verdictExit(doc); code != want {
			t.Errorf("exit %d, want %d from the counted verdicts\nstderr: %s", code, want, stderr)
		}
		return
	}
	checkAAVerdicts(t, doc, code, stdout, stderr, "tw@old", "tw@new", []string{"iperf3-1/value", "tcp_rr/value"})
}

// checkBuildPrograms checks that row records a build with exactly the
// programs want (option → path), each with a version starting with
// version and the file's SHA-256, and returns them by option.
func checkBuildPrograms(t *testing.T, doc *results.Document, row string, want map[string]string, version string) map[string]results.BuildProgram {
	t.Helper()
	tr, ok := doc.TransportOf(row)
	if !ok || tr.Build == nil {
		t.Fatalf("row %s missing or without its build (transports %+v)", row, doc.Transports)
	}
	got := map[string]results.BuildProgram{}
	for _, p := range tr.Build.Programs {
		got[p.Option] = p
		b, err := os.ReadFile(want[p.Option])
		if err != nil {
			t.Fatalf("%s: %v", row, err)
		}
		sum := sha256.Sum256(b)
		if want[p.Option] != p.Path || p.SHA256 != hex.EncodeToString(sum[:]) || !strings.HasPrefix(p.Version, version) {
			t.Errorf("%s program %+v: want %s at %q with a version %s… and the file's SHA-256", row, p, p.Option, want[p.Option], version)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s records programs %v, want %v", row, got, want)
	}
	return got
}

// checkAAVerdicts checks an A/A run's verdicts: every cell compares b with
// a, the cells named are there and counted, none says slower, and the exit
// code is the one the verdicts and failures call for.
func checkAAVerdicts(t *testing.T, doc *results.Document, code int, stdout, stderr, a, b string, cells []string) {
	t.Helper()
	v := doc.Verdicts
	if v == nil || len(v.Cells) == 0 {
		t.Fatalf("no verdicts (exit %d)\nstderr: %s", code, stderr)
	}
	seen := map[string]bool{}
	for _, c := range v.Cells {
		ratio := "-"
		if c.Ratio != nil {
			ratio = strconv.FormatFloat(*c.Ratio, 'f', 3, 64)
		}
		t.Logf("%s/%s: %s, %d pairs, B/A %s (%s)", c.Instrument, c.Metric, c.Verdict, c.Pairs, ratio, c.Reason)
		if c.A != a || c.B != b {
			t.Errorf("cell %+v: want A %s and B %s", c.VerdictCell, a, b)
		}
		if c.Counts {
			seen[c.Instrument+"/"+c.Metric] = true
		}
		if c.Verdict == "slower" {
			t.Errorf("A/A: %s/%s is slower", c.Instrument, c.Metric)
		}
	}
	for _, c := range cells {
		if !seen[c] {
			t.Errorf("no counted verdict for %s (counted: %v)", c, seen)
		}
	}
	if len(doc.Failures) > 0 {
		t.Errorf("failures: %+v", doc.Failures)
	}
	if want := verdictExit(doc); code != want {
		t.Errorf("exit %d, want %d from the counted verdicts\nstdout: %s\nstderr: %s", code, want, stdout, stderr)
	}
}
