package textfmt

import (
	"math"
	"testing"
)

func TestSig3(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{
		{1.523, "1.52"}, {45012, "45012"}, {0.01234, "0.0123"}, {0, "0"}, {-0.5, "-0.500"},
		{math.NaN(), Dash}, {math.Inf(1), Dash},
	} {
		if got := Sig3(tc.x); got != tc.want {
			t.Errorf("Sig3(%v) = %q, want %q", tc.x, got, tc.want)
		}
	}
	if got := Signed3(3.2); got != "+3.20" {
		t.Errorf("Signed3(3.2) = %q", got)
	}
}

// A value from data cannot split a row, start a line or become HTML or a
// link.
func TestTableRowEscapes(t *testing.T) {
	got := TableRow("a|b", "line\nbreak", "<i>[x](y)</i>", "`code`")
	want := "| a\\|b | line break | &lt;i&gt;\\[x\\](y)&lt;/i&gt; | `code` |"
	if got != want {
		t.Errorf("TableRow:\n got %s\nwant %s", got, want)
	}
	if got, want := MDText("`x` [y]"), "\\`x\\` \\[y\\]"; got != want {
		t.Errorf("MDText = %q, want %q", got, want)
	}
	if got := Plural(1, "run", "runs") + ", " + Plural(3, "run", "runs"); got != "1 run, 3 runs" {
		t.Errorf("Plural: %q", got)
	}
}
