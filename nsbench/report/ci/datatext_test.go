package ci

import (
	"bytes"
	"testing"

	"github.com/twnsbench/twnsbench/internal/hostile"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestStepSummaryShowsNamesAsText: the step summary shows what a results
// file names as text, as the report does (report's datatext_test.go, whose
// hostile names and check these are).
func TestStepSummaryShowsNamesAsText(t *testing.T) {
	rs := fixedVerdicts()[:2]
	for i := range rs {
		rs[i].Transport = hostile.Text
		rs[i].Reason = hostile.Text
	}
	run := fixedABRun()
	run.A, run.B = hostile.Names[0], hostile.Names[3]
	run.Versions = append(run.Versions, results.Fact{Key: "x", Label: hostile.Text, Value: hostile.Text})
	var sum bytes.Buffer
	if err := WriteStepSummary(&sum, rs, run); err != nil {
		t.Fatal(err)
	}
	hostile.CheckMarkdown(t, "the step summary", sum.Bytes())
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
