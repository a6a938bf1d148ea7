package ci

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// hostile is what a crafted results file, history line or host may name
// a transport, label, version or host: a terminal title escape, GitHub
// Actions workflow commands (one after a line break), HTML and a link.
var hostile = []string{
	"\x1b]0;pwned\x07",
	"::error title=x::y",
	"ok\n::warning::z",
	"<img src=x onerror=alert(1)>",
	"[click](javascript:alert(1))",
}

var hostileText = strings.Join(hostile, " ")

// liveLink is a Markdown link or image not preceded by a backslash
// escape: "[text](target)".
var liveLink = regexp.MustCompile(`(^|[^\\])\[[^\]]*[^\\]?\]\(`)

// checkMarkdownSafe fails when md, which took the hostile names, holds raw
// HTML from them, a live link, a raw control character, or a line a CI
// runner would read as a workflow command.
func checkMarkdownSafe(t *testing.T, what string, md []byte) {
	t.Helper()
	s := string(md)
	for _, bad := range []string{"<img", "\x1b", "\x07", "[click](javascript"} {
		if strings.Contains(s, bad) {
			t.Errorf("%s holds a raw %q", what, bad)
		}
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "::") {
			t.Errorf("%s has a line that starts a workflow command: %q", what, l)
		}
		if strings.Contains(l, "click") && liveLink.MatchString(l) {
			t.Errorf("%s has a live link from data: %q", what, l)
		}
	}
	if !strings.Contains(s, `&lt;img src=x onerror=alert(1)&gt;`) || !strings.Contains(s, `\[click\](javascript:alert(1))`) {
		t.Errorf("%s does not show the names as text", what)
	}
}

// TestStepSummaryShowsNamesAsText: the step summary shows what a results
// file names as text, as the report does (report's datatext_test.go, whose
// hostile names and check these are).
func TestStepSummaryShowsNamesAsText(t *testing.T) {
	rs := fixedVerdicts()[:2]
	for i := range rs {
		rs[i].Transport = hostileText
		rs[i].Reason = hostileText
	}
	run := fixedABRun()
	run.A, run.B = hostile[0], hostile[3]
	run.Versions = append(run.Versions, results.Fact{Key: "x", Label: hostileText, Value: hostileText})
	var sum bytes.Buffer
	if err := WriteStepSummary(&sum, rs, run); err != nil {
		t.Fatal(err)
	}
	checkMarkdownSafe(t, "the step summary", sum.Bytes())
}

// TestABRunAcrossHostsVersions: across hosts the step summary's versions
// name each role's host's copy of a build's program, with what that host
// read of it.
func TestABRunAcrossHostsVersions(t *testing.T) {
	d := &results.Document{Transports: []results.Transport{{Name: "ssh@a", Build: &results.Build{Label: "a", Programs: []results.BuildProgram{
		{Option: "sshd", Path: "/opt/a/sshd", Version: "OpenSSH_9.2p1", SHA256: "ab12", Hosts: []results.ProgramCopy{
			{Role: "server", Host: "root@10.0.0.3:22", Path: "/var/tmp/twnsb-3fa9c1-server/build-a-sshd", SHA256: "ab12"}}},
	}}}}}
	vs := ABRunOf(d).Versions
	if len(vs) != 2 || vs[1].Key != "ssh@a sshd on the server's host" ||
		vs[1].Value != "version not read (/var/tmp/twnsb-3fa9c1-server/build-a-sshd on root@10.0.0.3:22, SHA-256 ab12)" {
		t.Errorf("step summary versions %+v, want the program and its copy on the server's host", vs)
	}
}
