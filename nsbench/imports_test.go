package nsbench

import (
	"go/parser"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/twnsbench/twnsbench/"

// importLevels are the module's packages in the pipeline's order, from
// the bottom up: a package imports only packages of lower levels, never
// one of its own level or above. (Test files and internal/nstest
// may import anything.)
var importLevels = [][]string{
	{"nsbench/stats", "nsbench/ns", "nsbench/pki", "nsbench/textsafe", "nsbench/safedir", "nsbench/callgrind"},
	{"nsbench/proc", "nsbench/results", "nsbench/topology", "nsbench/metrics", "nsbench/account", "nsbench/report/textfmt", "nsbench/report/svg"},
	{"nsbench/role", "nsbench/verdict", "nsbench/manyrr", "nsbench/rpm", "nsbench/recovery", "nsbench/profile"},
	{"nsbench/hosts", "nsbench/residue", "nsbench/impair", "nsbench/preflight", "wg", "relay", "nsbench/report", "nsbench/report/ci", "nsbench/compare"},
	// nsbench/wan sets the WAN conditions on a testbed it reaches through
	// roles and impair, and verifies them into results records: above impair
	// and preflight, below the cell loop that uses it.
	{"nsbench/transport", "nsbench/remote", "nsbench/remote/remotetest", "nsbench/wan"},
	{"nsbench/instrument"},
	{"nsbench/fanout"},
	{"nsbench"},
	{"cmd/twnsbench"},
}

// onlyImports narrows some packages further: the report and compare know
// results and statistics only (the report and the CI formats also the A/B
// verdicts they write, which are statistics over results), and how to
// print text taken from them.
var onlyImports = map[string][]string{
	"nsbench/report":         {"nsbench/results", "nsbench/stats", "nsbench/verdict", "nsbench/textsafe", "nsbench/report/textfmt", "nsbench/report/svg"},
	"nsbench/report/ci":      {"nsbench/results", "nsbench/verdict", "nsbench/report/textfmt"},
	"nsbench/report/textfmt": {"nsbench/textsafe"},
	"nsbench/report/svg":     {},
	"nsbench/compare":        {"nsbench/results", "nsbench/stats", "nsbench/textsafe"},
	"nsbench/verdict":        {"nsbench/results", "nsbench/stats"},
}

// moduleImports lists, per package directory of the module, the module's
// packages its non-test files import.
func moduleImports(t *testing.T) map[string]map[string]bool {
	t.Helper()
	_, pkgs := parseModule(t, parser.ImportsOnly)
	out := map[string]map[string]bool{}
	for dir, files := range pkgs {
		out[dir] = map[string]bool{}
		for _, f := range files {
			for _, im := range f.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				if rest, ok := strings.CutPrefix(p, module); ok {
					out[dir][rest] = true
				} else if p == strings.TrimSuffix(module, "/") {
					out[dir]["."] = true
				}
			}
		}
	}
	return out
}

// TestImportDirection: no package imports one of its own level or above
// it in the pipeline.
func TestImportDirection(t *testing.T) {
	level := map[string]int{}
	for i, l := range importLevels {
		for _, p := range l {
			level[p] = i
		}
	}
	for pkg, imports := range moduleImports(t) {
		if strings.HasPrefix(pkg, "internal/") || pkg == "scripts" || strings.HasPrefix(pkg, "scripts/") {
			continue
		}
		lp, ok := level[pkg]
		if !ok {
			t.Errorf("package %s has no level: add it to importLevels", pkg)
			continue
		}
		for im := range imports {
			if strings.HasPrefix(im, "internal/") {
				continue
			}
			li, ok := level[im]
			if !ok {
				t.Errorf("%s imports %s, which has no level", pkg, im)
				continue
			}
			if li >= lp {
				t.Errorf("%s imports %s: a package of its own level or above it", pkg, im)
			}
		}
		if only, ok := onlyImports[pkg]; ok {
			for im := range imports {
				if !contains(only, im) {
					t.Errorf("%s imports %s: it may import only %v of the module", pkg, im, only)
				}
			}
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
