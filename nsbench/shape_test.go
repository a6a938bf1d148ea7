package nsbench

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// layers are the package's files from the top of the pipeline down. A
// file may use what its own layer and the layers below it declare, never
// what a layer above declares: run → cell → the WAN (the testbed handed
// to nsbench/wan) and memory → the schedule and progress → the testbed → the workspace → the recorder →
// the options.
var layers = [][]string{
	{"run.go", "sweep.go", "selfcheck.go", "selfcheck_rpm.go", "clean.go", "reports.go", "serveagent.go", "hostops.go"},
	{"cell.go", "sample.go", "fault.go", "paired.go", "profiling.go"}, // one type, cellLoop, in four files (paired.go's pairing is one of its blocks; profiling.go its profiles)
	{"wan.go", "memory.go"}, // wan.go: the testbed handed to nsbench/wan
	{"schedule.go", "progress.go", "progress_times.go"},
	{"testbed.go", "machines.go"},
	{"bed.go", "hostsbed.go"}, // a bed's roles built here or on the hosts
	{"workspace.go", "undo.go"},
	{"recorder.go", "document.go"},
	{"options.go", "sweepplan.go", "network.go", "pin.go", "status.go", "builds.go", "provenance.go", "sites.go", "sitebuilds.go", "bedagents.go"},
}

// parsePackage parses the package's non-test files and resolves each
// identifier to its declaration (other packages are opaque: only this
// package's declarations matter here).
func parsePackage(t *testing.T) (*token.FileSet, []*ast.File, *types.Info) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: opaque{}, Error: func(error) {}}
	conf.Check("nsbench", fset, files, info) // errors: only from the opaque imports
	return fset, files, info
}

type opaque struct{}

func (opaque) Import(p string) (*types.Package, error) {
	pkg := types.NewPackage(p, path.Base(p))
	pkg.MarkComplete()
	return pkg, nil
}

// TestFileLayers: the files depend on each other in one direction.
func TestFileLayers(t *testing.T) {
	layer := map[string]int{}
	for i, l := range layers {
		for _, f := range l {
			layer[f] = i
		}
	}
	fset, files, info := parsePackage(t)
	for _, f := range files {
		name := fset.Position(f.Pos()).Filename
		if _, ok := layer[name]; !ok {
			t.Errorf("%s is in no layer: add it to layers", name)
		}
	}
	seen := map[string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() == nil || obj.Pkg().Path() != "nsbench" || !obj.Pos().IsValid() {
			continue
		}
		from, to := fset.Position(id.Pos()).Filename, fset.Position(obj.Pos()).Filename
		lf, okf := layer[from]
		lt, okt := layer[to]
		if !okf || !okt || lt >= lf {
			continue
		}
		if k := from + "→" + to + ":" + obj.Name(); !seen[k] {
			seen[k] = true
			t.Errorf("%s uses %s of %s, a layer above it", from, obj.Name(), to)
		}
	}
}
