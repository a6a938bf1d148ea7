// Package hostile holds what the renderers' tests feed them as names from
// data (a crafted results file, history line or host) and the check that
// what they wrote shows those names as text: shared by the report's tests
// and the CI formats'.
package hostile

import (
	"regexp"
	"strings"
	"testing"
)

// Names are what a crafted results file, history line or host may name a
// transport, label, version or host: a terminal title escape, GitHub
// Actions workflow commands (one after a line break), HTML and a link.
var Names = []string{
	"\x1b]0;pwned\x07",
	"::error title=x::y",
	"ok\n::warning::z",
	"<img src=x onerror=alert(1)>",
	"[click](javascript:alert(1))",
}

// Text is every name in one string.
var Text = strings.Join(Names, " ")

// liveLink is a Markdown link or image not preceded by a backslash
// escape: "[text](target)".
var liveLink = regexp.MustCompile(`(^|[^\\])\[[^\]]*[^\\]?\]\(`)

// CheckMarkdown fails t when md, which took the names, holds raw HTML from
// them, a live link, a raw control character, or a line a CI runner would
// read as a workflow command.
func CheckMarkdown(t testing.TB, what string, md []byte) {
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
