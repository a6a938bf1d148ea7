package svg

import (
	"encoding/xml"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// niceScale returns an axis maximum at or above m and a tick step of 1, 2,
// 2.5 or 5 times a power of ten, giving 3 to 6 ticks.
func niceScale(m float64) (top, step float64) {
	if m <= 0 || math.IsNaN(m) || math.IsInf(m, 0) {
		return 1, 0.25
	}
	raw := m / 4
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, f := range []float64{1, 2, 2.5, 5, 10} {
		if step = f * pow; step >= raw {
			break
		}
	}
	return math.Ceil(m/step-1e-9) * step, step
}

// tickLabel prints v with the decimals step needs.
func tickLabel(v, step float64) string {
	prec := 0
	for s := step; prec < 6 && math.Abs(s-math.Round(s)) > 1e-9; s *= 10 {
		prec++
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// TextWidth estimates the rendered width of s: an average glyph of 0.6 em,
// which holds for the sans-serif fonts of fontFamily and errs wide.
func TextWidth(s string, size float64) float64 {
	return float64(utf8.RuneCountInString(s)) * size * 0.6
}

// fitSize is the font size, at most size and at least least, at which s
// fits width: a long condition label stays whole in a panel's title.
func fitSize(s string, width, size, least float64) float64 {
	if w := TextWidth(s, size); w > width {
		size = max(least, math.Floor(size*width/w*2)/2)
	}
	return size
}

// Truncate shortens s with an ellipsis in its middle so that it fits
// width. The middle, because rows differ at their ends as often as at
// their starts: two builds of one transport ("SSH over WireGuard
// (wireguard-go) @a" and "… @b") and a transport's variants differ only
// there.
func Truncate(s string, width, size float64) string {
	if TextWidth(s, size) <= width {
		return s
	}
	r := []rune(s)
	keep := max(1, int(width/(size*0.6))-1)
	if keep >= len(r) {
		return s
	}
	tail := keep * 2 / 5
	head := keep - tail
	return strings.TrimRight(string(r[:head]), " ") + "…" + strings.TrimLeft(string(r[len(r)-tail:]), " ")
}

// N1 formats a coordinate with at most one decimal: stable bytes, no
// exponent notation.
func N1(x float64) string {
	return strconv.FormatFloat(math.Round(x*10)/10, 'f', -1, 64)
}

// Esc escapes text for XML character data and attribute values.
func Esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // writing to a strings.Builder cannot fail
	return b.String()
}
