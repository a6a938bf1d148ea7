package svg

import (
	"math"
	"strings"
	"testing"
)

func TestNiceScale(t *testing.T) {
	for _, tt := range []struct{ m, top, step float64 }{
		{3.73, 4, 1},
		{0.11, 0.15, 0.05},
		{361, 400, 100},
		{32909, 40000, 10000},
		{407.4, 600, 200},
		{0, 1, 0.25},
	} {
		top, step := niceScale(tt.m)
		if math.Abs(top-tt.top) > 1e-9 || math.Abs(step-tt.step) > 1e-9 {
			t.Errorf("niceScale(%v) = %v, %v; want %v, %v", tt.m, top, step, tt.top, tt.step)
		}
	}
}

// A label too long for its place keeps its start and its end: the two
// builds of one transport stay apart.
func TestTruncateKeepsBothEnds(t *testing.T) {
	a := Truncate("SSH over WireGuard (wireguard-go) @a", 150, 12)
	b := Truncate("SSH over WireGuard (wireguard-go) @b", 150, 12)
	if a == b || !strings.HasPrefix(a, "SSH over") || !strings.HasSuffix(a, "@a") || !strings.Contains(a, "…") {
		t.Errorf("truncated to %q and %q: want both ends kept, and the two apart", a, b)
	}
	if TextWidth(a, 12) > 150 {
		t.Errorf("%q is wider than 150", a)
	}
	if got := Truncate("short", 150, 12); got != "short" {
		t.Errorf("a label that fits: %q", got)
	}
}
