package instrument

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// parseMaxQuote is how many bytes of a tool's output an error message quotes.
const parseMaxQuote = 200

// parseLines splits a tool's output into lines with trailing "\r" and
// surrounding blanks removed. OpenSSH writes its diagnostics with "\r\n".
func parseLines(out []byte) []string {
	raw := strings.Split(string(out), "\n")
	lines := make([]string, 0, len(raw))
	for _, l := range raw {
		lines = append(lines, strings.TrimSpace(strings.TrimRight(l, "\r")))
	}
	return lines
}

// parseCut shortens s to at most parseMaxQuote bytes without splitting a UTF-8
// sequence, marking the cut with "...".
func parseCut(s string) string {
	if len(s) <= parseMaxQuote {
		return s
	}
	cut := parseMaxQuote
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// parseFirstLine returns the first non-blank line of out, cut to parseMaxQuote bytes.
func parseFirstLine(out []byte) string {
	for _, l := range parseLines(out) {
		if l != "" {
			return parseCut(l)
		}
	}
	return ""
}

// parseDescribe names out for an error message: "empty output" or the
// quoted first line.
func parseDescribe(out []byte) string {
	if len(bytes.TrimSpace(out)) == 0 {
		return "empty output"
	}
	return fmt.Sprintf("output begins %q", parseFirstLine(out))
}

// parseNonBlank returns the non-blank lines of out, at most n of them (n <= 0:
// all), each cut to parseMaxQuote bytes.
func parseNonBlank(out []byte, n int) []string {
	var keep []string
	for _, l := range parseLines(out) {
		if l == "" {
			continue
		}
		keep = append(keep, parseCut(l))
		if n > 0 && len(keep) == n {
			break
		}
	}
	return keep
}
