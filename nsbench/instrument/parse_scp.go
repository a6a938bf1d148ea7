package instrument

import (
	"fmt"
	"strings"
)

// scpHarmlessLine is what OpenSSH 9.2's SFTP-mode scp prints (as
// "scp: local ftruncate ...", ending "\r\n") when the target is /dev/null,
// which cannot be truncated. The copy itself succeeds and scp exits 0.
const scpHarmlessLine = `local ftruncate "/dev/null": Invalid argument`

// isHarmlessScpLine reports whether one stderr line is the harmless
// ftruncate complaint (with or without the "scp: " prefix and "\r").
func isHarmlessScpLine(line string) bool {
	l := strings.TrimSpace(strings.TrimRight(line, "\r"))
	return strings.TrimPrefix(l, "scp: ") == scpHarmlessLine
}

// scpStderrLines returns scp's stderr as lines, "\r" and blank lines and the
// harmless ftruncate line removed, each line cut to 200 bytes.
func scpStderrLines(stderr []byte) []string {
	var keep []string
	for _, l := range parseNonBlank(stderr, 0) {
		if !isHarmlessScpLine(l) {
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
