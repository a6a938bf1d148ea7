package wan

import (
	"testing"
)

// A verification's note joins its parts with "; " and never ends on an
// empty one: a condition without a rate cap has no rate note, and a
// dangling "; " made the harness's notes unreadable to a reader splitting
// them (nstest.WANVerified, which then refused a loss missed by chance).
func TestJoinNoteSkipsEmpty(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{"", "", ""},
		{"loss off", "", "loss off"},
		{"", "goodput under", "goodput under"},
		{"loss off", "goodput under", "loss off; goodput under"},
	} {
		if got := joinNote(c.a, c.b); got != c.want {
			t.Errorf("joinNote(%q, %q) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}
