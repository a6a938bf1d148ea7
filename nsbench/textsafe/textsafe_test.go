package textsafe

import (
	"errors"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"wireguard", "wireguard"},
		{"tw (kernel) 1.2.3-rc1+git/x:y 5 %", "tw (kernel) 1.2.3-rc1+git/x:y 5 %"},
		{"Grüße, 東京 — ok", "Grüße, 東京 — ok"},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\a`},
		{"a\tb\r\nc", `a\tb\r\nc`},
		{"x\u0085y\u009bz", `x\u0085y\u009bz`},
		{"abc\u202egnp.exe", `abc\u202egnp.exe`},
		{"line\u2028two", `line\u2028two`},
		{"bad\xffbyte", `bad\xffbyte`},
		{"keeps \uFFFD", "keeps \uFFFD"},
		{"::error title=x::y", `"::error title=x::y"`},
		{"  ::warning::z", `"  ::warning::z"`},
		{"##[error]z", `"##[error]z"`},
		{"ok\n::warning::z", `ok\n::warning::z`},
		{"a::b", "a::b"},
	} {
		got := Quote(c.in)
		if got != c.want {
			t.Errorf("Quote(%q) = %q, want %q", c.in, got, c.want)
		}
		for _, bad := range []string{"\x1b", "\x07", "\n", "\r", "\u202e"} {
			if strings.Contains(got, bad) {
				t.Errorf("Quote(%q) = %q keeps %q", c.in, got, bad)
			}
		}
	}
	if got := Error(errors.New("host: \x1b[2J")); got != `host: \x1b[2J` {
		t.Errorf("Error = %q", got)
	}
	if Error(nil) != "" {
		t.Error("Error(nil) not empty")
	}
}
