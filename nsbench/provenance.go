package nsbench

import (
	"runtime"
	"runtime/debug"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// Provenance is what this binary says of its own build: its module
// version, the VCS commit it was built from and whether the tree had
// changes, and the Go toolchain (runtime/debug.ReadBuildInfo).
type Provenance struct {
	Version  string // the module's version, "devel" for a build from a checkout
	Commit   string // the full VCS revision, "" when the build recorded none
	Modified bool   // the tree had uncommitted changes
	Go       string
}

// ReadProvenance reads this binary's build information.
func ReadProvenance() Provenance {
	p := Provenance{Version: "devel", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return p
	}
	return provenanceOf(bi, p)
}

func provenanceOf(bi *debug.BuildInfo, p Provenance) Provenance {
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		p.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		p.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			p.Commit = s.Value
		case "vcs.modified":
			p.Modified = s.Value == "true"
		}
	}
	return p
}

// results is p as the results document records it (env.provenance).
func (p Provenance) results() *results.Provenance {
	r := results.Provenance(p)
	return &r
}

// String is the one line the results' env.harness and the report show:
// "twnsbench devel 0123456789ab-dirty (go1.22.1)".
func (p Provenance) String() string {
	v := p.Version
	if len(p.Commit) >= 12 {
		v += " " + p.Commit[:12]
		if p.Modified {
			v += "-dirty"
		}
	}
	return "twnsbench " + v + " (" + p.Go + ")"
}

// Long is `twnsbench --version`'s text: every field on its own line.
func (p Provenance) Long() string {
	commit := p.Commit
	switch {
	case commit == "":
		commit = "unknown (built without VCS information)"
	case p.Modified:
		commit += " (modified: uncommitted changes)"
	}
	return "twnsbench " + p.Version + "\ncommit " + commit + "\n" + p.Go + "\n"
}
