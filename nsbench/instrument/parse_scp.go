package instrument

import (
	"fmt"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// What ssh -v prints (OpenSSH's client_session2_setup, unchanged since
// SSH-2 came in) once the session channel is open, as it asks the server
// to run the copy: scp's SFTP subsystem, or the legacy "scp -f" and the
// "cat" form's command. The server answers it with the file.
const (
	sshSubsystemLine = "debug1: Sending subsystem: "
	sshCommandLine   = "debug1: Sending command: "
)

// scpCopyRequested returns when ssh asked the server for the copy, from
// the tool's start, and whether it said so.
func scpCopyRequested(lines []proc.Line) (time.Duration, bool) {
	for _, l := range lines {
		if strings.HasPrefix(l.Text, sshSubsystemLine) || strings.HasPrefix(l.Text, sshCommandLine) {
			return l.At, true
		}
	}
	return 0, false
}

// sshVerbosePrefixes start the lines scp -v and its ssh add around a copy
// (testdata/scp-sftp-verbose.stderr): debug lines, the ssh command, the
// banner, the authentication and the byte counts at exit, the host key
// notice LogLevel=ERROR would have kept quiet, and the legacy protocol's
// file header as both ends' scp -v show it. They are never the
// reason a copy failed.
var sshVerbosePrefixes = []string{"debug1: ", "debug2: ", "debug3: ", "Executing: program ", "OpenSSH_",
	"Authenticated to ", "Transferred: ", "Bytes per second: ", "Warning: Permanently added ", "Sink: ", "Sending file modes: "}

func isSSHVerboseLine(line string) bool {
	for _, p := range sshVerbosePrefixes {
		if strings.HasPrefix(scpMessage(line), p) {
			return true
		}
	}
	return false
}

// scpHarmlessLine is what OpenSSH 9.2's SFTP-mode scp prints (as
// "scp: local ftruncate ...", ending "\r\n") when the target is /dev/null,
// which cannot be truncated. The copy itself succeeds and scp exits 0.
const scpHarmlessLine = `local ftruncate "/dev/null": Invalid argument`

// isHarmlessScpLine reports whether one stderr line is the harmless
// ftruncate complaint (with or without scp's prefix and "\r").
func isHarmlessScpLine(line string) bool { return scpMessage(line) == scpHarmlessLine }

// scpMessage is a stderr line without "\r", surrounding space and scp's
// own prefix: "scp: ", or the program's path ("/usr/bin/scp: ") when it
// was started by its path, as the harness starts it.
func scpMessage(line string) string {
	l := strings.TrimSpace(strings.TrimRight(line, "\r"))
	if head, rest, ok := strings.Cut(l, ": "); ok && (head == "scp" || strings.HasSuffix(head, "/scp")) {
		return rest
	}
	return l
}

// scpStderrLines returns scp's stderr as lines, "\r" and blank lines, the
// harmless ftruncate line and ssh -v's chatter removed, each line cut to
// 200 bytes.
func scpStderrLines(stderr []byte) []string {
	var keep []string
	for _, l := range parseNonBlank(stderr, 0) {
		if !isHarmlessScpLine(l) && !isSSHVerboseLine(l) {
			keep = append(keep, l)
		}
	}
	return keep
}

// classifyScpError turns an scp run's stderr and exit error (nil for exit 0)
// into the sample's error. Exit 0 is success whatever stderr says (the
// ftruncate line comes with exit 0). A non-zero exit is an error that wraps
// exitErr and carries scp's first meaningful stderr lines, e.g.
// "scp: /path: No such file or directory" or "ssh: connect to host ...:
// Connection refused; scp: Connection closed".
func classifyScpError(stderr []byte, exitErr error) error {
	if exitErr == nil {
		return nil
	}
	lines := scpStderrLines(stderr)
	if len(lines) == 0 {
		return fmt.Errorf("scp failed (%w) with no diagnostic on stderr", exitErr)
	}
	if len(lines) > 3 {
		lines = lines[:3]
	}
	return fmt.Errorf("scp failed (%w): %s", exitErr, strings.Join(lines, "; "))
}
