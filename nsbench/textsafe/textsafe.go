// Package textsafe makes text taken from data — a results file, a history
// line, a remote host's error — safe to print on a terminal or in a CI
// log: it cannot move the cursor, retitle the terminal, reorder what a
// reader sees or start a GitHub Actions workflow command.
package textsafe

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Quote returns s with every control character (C0 including tab and line
// breaks, DEL, C1), every bidirectional formatting character, the Unicode
// line and paragraph separators and every invalid byte written as a Go
// escape (\x1b, \n, \u202e, \xff); other text, any script, is unchanged.
// When s would start a workflow command ("::" or the older "##[", after
// leading spaces) it comes back whole in Go quotes, so no line printed
// from data starts one.
func Quote(s string) string {
	if command(s) {
		return strconv.Quote(s)
	}
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i]), 16))
		case unsafe(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Error is Quote of err's text, "" for nil.
func Error(err error) string {
	if err == nil {
		return ""
	}
	return Quote(err.Error())
}

// command reports whether s, printed at the start of a line, would be
// read by a GitHub Actions runner as a workflow command: the runner
// trims leading white space first.
func command(s string) bool {
	t := strings.TrimLeftFunc(s, unicode.IsSpace)
	return strings.HasPrefix(t, "::") || strings.HasPrefix(t, "##[")
}

func needsEscape(s string) bool {
	for i, r := range s {
		if unsafe(r) || r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			return true
		}
	}
	return false
}

// unsafe reports whether r changes what a terminal or a reader shows
// beyond its own glyph.
func unsafe(r rune) bool {
	switch {
	case unicode.IsControl(r): // C0, DEL, C1 (ESC, BEL, CSI, OSC, …)
		return true
	case r == '\u061c', r == '\u200e', r == '\u200f', // ALM, LRM, RLM
		'\u202a' <= r && r <= '\u202e', // LRE RLE PDF LRO RLO
		'\u2066' <= r && r <= '\u2069': // LRI RLI FSI PDI
		return true
	case r == '\u2028', r == '\u2029': // line and paragraph separators
		return true
	}
	return false
}
