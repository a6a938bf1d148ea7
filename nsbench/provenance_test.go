package nsbench

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestProvenanceOf(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.modified", Value: "true"}}}
	p := provenanceOf(bi, Provenance{Version: "devel", Go: "go0"})
	want := Provenance{Version: "devel", Commit: "0123456789abcdef0123456789abcdef01234567", Modified: true, Go: "go1.99.1"}
	if p != want {
		t.Fatalf("provenanceOf = %+v, want %+v", p, want)
	}
	if r := p.results(); r.Commit != want.Commit || !r.Modified || r.Go != "go1.99.1" || r.Version != "devel" {
		t.Errorf("recorded as %+v", r)
	}
	if got := p.String(); got != "twnsbench devel 0123456789ab-dirty (go1.99.1)" {
		t.Errorf("String = %q", got)
	}
	long := p.Long()
	for _, w := range []string{"twnsbench devel\n", "commit 0123456789abcdef0123456789abcdef01234567 (modified", "go1.99.1"} {
		if !strings.Contains(long, w) {
			t.Errorf("Long = %q, want it to hold %q", long, w)
		}
	}
	clean := provenanceOf(&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, Provenance{Version: "devel", Go: "go1"})
	if clean.Version != "v1.2.3" || clean.Commit != "" || !strings.Contains(clean.Long(), "commit unknown") {
		t.Errorf("no VCS: %+v / %q", clean, clean.Long())
	}
}
