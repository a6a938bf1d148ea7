package instrument

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parseTestdata loads a captured tool output from testdata/.
func parseTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parseWantErr fails unless err is non-nil and contains every want.
func parseWantErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want one containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func TestParseFirstLineCutsLongLines(t *testing.T) {
	long := strings.Repeat("x", 500) + "\nsecond"
	got := parseFirstLine([]byte("\n\r\n" + long))
	if len(got) != parseMaxQuote+len("...") || !strings.HasSuffix(got, "...") {
		t.Fatalf("parseFirstLine = %q (len %d)", got, len(got))
	}
	// A cut never splits a multi-byte rune.
	got = parseCut(strings.Repeat("a", parseMaxQuote-1) + "µµ")
	if got != strings.Repeat("a", parseMaxQuote-1)+"..." {
		t.Fatalf("parseCut split a rune: %q", got)
	}
	if d := parseDescribe([]byte(" \n\t")); d != "empty output" {
		t.Fatalf("parseDescribe(blank) = %q", d)
	}
}
