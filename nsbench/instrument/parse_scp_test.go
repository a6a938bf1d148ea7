package instrument

import (
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// parseExitError runs a command that exits with the given status, to get a
// genuine *exec.ExitError.
func parseExitError(t *testing.T, status string) error {
	t.Helper()
	err := exec.Command("sh", "-c", "exit "+status).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("want *exec.ExitError, got %v", err)
	}
	return err
}

func TestClassifyScpErrorCaptured(t *testing.T) {
	exit1, exit255 := parseExitError(t, "1"), parseExitError(t, "255")
	tests := []struct {
		name    string
		file    string
		exitErr error
		want    []string // nil: no error
	}{
		// OpenSSH 9.2 SFTP-mode scp to /dev/null: the ftruncate line
		// ("scp: " prefix, CRLF), exit 0. Harmless.
		{"sftp to /dev/null", "scp-sftp-devnull.stderr", nil, nil},
		// Legacy (-O) mode prints nothing.
		{"legacy to /dev/null", "scp-legacy-devnull.stderr", nil, nil},
		{"missing file (sftp, exit 1)", "scp-missing-file.stderr", exit1,
			[]string{"scp failed (exit status 1): scp: /tmp/twnsbtest-parse-ssh/missing.bin: No such file or directory"}},
		{"missing file (legacy, exit 1)", "scp-legacy-missing-file.stderr", exit1,
			[]string{"scp: /tmp/twnsbtest-parse-ssh/missing.bin: No such file or directory"}},
		{"connection refused (exit 255)", "scp-refused.stderr", exit255,
			[]string{"scp failed (exit status 255): ssh: connect to host 127.0.0.1 port 15299: Connection refused; scp: Connection closed"}},
		{"auth denied (exit 255)", "scp-auth-denied.stderr", exit255,
			[]string{"root@127.0.0.1: Permission denied (publickey).; scp: Connection closed"}},
		// scp -v's copy (SFTP): ssh's and scp's chatter and the ftruncate
		// line as "/usr/bin/scp: …", exit 0.
		{"verbose sftp to /dev/null", "scp-sftp-verbose.stderr", nil, nil},
		// The same with a failing exit: none of the chatter is a reason.
		{"verbose chatter but non-zero exit", "scp-sftp-verbose.stderr", exit1,
			[]string{"scp failed (exit status 1) with no diagnostic on stderr"}},
		// The harmless line alone with a failing exit: the exit still counts.
		{"ftruncate line but non-zero exit", "scp-sftp-devnull.stderr", exit1,
			[]string{"scp failed (exit status 1) with no diagnostic on stderr"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := classifyScpError(parseTestdata(t, tc.file), tc.exitErr)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("want nil, got %v", err)
				}
				return
			}
			parseWantErr(t, err, tc.want...)
			if !errors.Is(err, tc.exitErr) {
				t.Errorf("error does not wrap the exit error: %v", err)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Errorf("errors.As(*exec.ExitError) failed on %v", err)
			}
		})
	}
}

func TestClassifyScpErrorMore(t *testing.T) {
	exit1 := parseExitError(t, "1")
	if err := classifyScpError(nil, nil); err != nil {
		t.Fatalf("empty stderr, exit 0: %v", err)
	}
	if err := classifyScpError(nil, exit1); err == nil {
		t.Fatal("empty stderr, exit 1: want error")
	}
	// The harmless line mixed with a real failure: only the real line is
	// reported, and at most three lines.
	stderr := []byte("scp: local ftruncate \"/dev/null\": Invalid argument\r\nscp: read remote: Connection reset\r\nb\nc\nd\n")
	err := classifyScpError(stderr, exit1)
	parseWantErr(t, err, "scp failed (exit status 1): scp: read remote: Connection reset; b; c")
	if err != nil && len(err.Error()) != len("scp failed (exit status 1): scp: read remote: Connection reset; b; c") {
		t.Errorf("more than three lines reported: %q", err)
	}
}

func TestScpStderrLines(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"scp: local ftruncate \"/dev/null\": Invalid argument\r\n", nil},
		{"local ftruncate \"/dev/null\": Invalid argument\n", nil},
		// ftruncate on anything but /dev/null is a real error.
		{"scp: local ftruncate \"/tmp/x\": Invalid argument\r\n", []string{"scp: local ftruncate \"/tmp/x\": Invalid argument"}},
		// scp -O -v's chatter around a real reason.
		{"Sink: C0644 1048576 f.bin\nscp: debug1: fd 3 clearing O_NONBLOCK\nSending file modes: C0644 1048576 f.bin\n/usr/bin/scp: write: Broken pipe\n",
			[]string{"/usr/bin/scp: write: Broken pipe"}},
		{"\r\nssh: connect to host h port 22: Connection refused\r\n\r\nscp: Connection closed\r\n",
			[]string{"ssh: connect to host h port 22: Connection refused", "scp: Connection closed"}},
	}
	for _, tc := range tests {
		if got := scpStderrLines([]byte(tc.in)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("scpStderrLines(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, l := range []string{"scp: local ftruncate \"/dev/null\": Invalid argument\r", "/usr/bin/scp: local ftruncate \"/dev/null\": Invalid argument"} {
		if !isHarmlessScpLine(l) {
			t.Errorf("harmless line %q not recognised", l)
		}
	}
}

// TestScpCopyRequestedCaptured: in a real scp -v run the copy's request is
// ssh's "Sending subsystem: sftp", after the authentication and the
// session channel, before scp's own "Fetching".
func TestScpCopyRequestedCaptured(t *testing.T) {
	var lines []proc.Line
	for i, l := range strings.Split(string(parseTestdata(t, "scp-sftp-verbose.stderr")), "\n") {
		lines = append(lines, proc.Line{At: time.Duration(i) * time.Millisecond, Text: strings.TrimSuffix(l, "\r")})
	}
	at, ok := scpCopyRequested(lines)
	if !ok {
		t.Fatal("no copy request found")
	}
	i := int(at / time.Millisecond)
	if lines[i].Text != "debug1: Sending subsystem: sftp" || !strings.HasPrefix(lines[i-10].Text, "Authenticated to ") || !strings.Contains(lines[i+2].Text, "debug1: Fetching ") {
		t.Errorf("copy requested at line %d %q", i, lines[i].Text)
	}
	if _, ok := scpCopyRequested(lines[:i]); ok {
		t.Error("found a request before ssh sent it")
	}
}
