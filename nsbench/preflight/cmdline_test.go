package preflight

import (
	"slices"
	"testing"
)

func TestCommandLine(t *testing.T) {
	got := commandLine([]string{"./twnsbench", "run", "--out", "my results", "--wan=30ms:0.1%", "it's", ""})
	want := `./twnsbench run --out 'my results' --wan=30ms:0.1% 'it'\''s' ''`
	if got != want {
		t.Errorf("commandLine = %s\nwant          %s", got, want)
	}
}

func TestWithFlag(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"tw", "run", "--size", "5"}, []string{"tw", "run", "--size", "2.7"}},
		{[]string{"tw", "run", "--size=5", "-v"}, []string{"tw", "run", "--size=2.7", "-v"}},
		{[]string{"tw", "run", "-size", "5"}, []string{"tw", "run", "-size", "2.7"}},
		{[]string{"tw", "run"}, []string{"tw", "run", "--size", "2.7"}},
		{[]string{"tw", "run", "--", "x"}, []string{"tw", "run", "--size", "2.7", "--", "x"}},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		if got := withFlag(in, "--size", "2.7"); !slices.Equal(got, tt.want) {
			t.Errorf("withFlag(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("withFlag modified its input: %q", in)
		}
	}
}
