package nsbench

import (
	"go/ast"
	"go/token"
	"go/types"
	"path"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// nsEntrants are the packages that enter network namespaces: ns (the one
// place that locks a thread and calls setns, and the launcher's helper),
// topology and role (which build a role's namespace and carry out its ops
// there) and proc (which starts a program inside one).
var nsEntrants = []string{"nsbench/ns", "nsbench/topology", "nsbench/role", "nsbench/proc"}

// nsEntryExceptions are the other places allowed to enter a namespace,
// by file (relative to the module root), with why.
var nsEntryExceptions = map[string]string{
	"nsbench/selfcheck.go":                    "the self-check measures the bare form (`ip netns exec` from sh, no launcher) against the launcher's",
	"nsbench/remote/remotetest/remotetest.go": "test harness: sets up the emulated machines' namespaces for tests",
}

// nsEntries are, by import path, the functions, methods ("Type.Method")
// and constants that enter a network namespace or read the thread's.
var nsEntries = map[string][]string{
	"github.com/vishvananda/netns": {"Set", "Get", "GetFromName", "GetFromPath", "GetFromPid", "GetFromThread", "GetFromDocker", "New", "NewNamed"},
	"golang.org/x/sys/unix":        {"Setns", "Unshare", "SYS_SETNS", "CLONE_NEWNET"},
	"syscall":                      {"Unshare", "SYS_SETNS", "CLONE_NEWNET"},
	module + "nsbench/ns":          {"NS.Do", "HelperCommand"},
}

// TestNamespaceEntry: only role, ns, topology and proc enter a network
// namespace: no other package's code calls netns.Set/Get…, setns or
// unshare, an *ns.NS's Do, the launcher's helper, or runs `ip netns exec`
// or nsenter.
func TestNamespaceEntry(t *testing.T) {
	fset, pkgs := parseModule(t, 0)
	imp := &moduleImporter{fset: fset, pkgs: pkgs, done: map[string]*types.Package{}}
	var found []string
	excepted := map[string]bool{}
	for dir, files := range pkgs {
		if contains(nsEntrants, dir) {
			continue
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: imp, Error: func(error) {}}
		conf.Check(module+dir, fset, files, info) // errors: only from the opaque imports
		for _, f := range files {
			for _, e := range nsEntriesIn(f, info) {
				file := moduleFile(fset, e.pos)
				if _, ok := nsEntryExceptions[file]; ok {
					excepted[file] = true
					continue
				}
				found = append(found, fset.Position(e.pos).String()[len("../"):]+": "+e.what)
			}
		}
	}
	sort.Strings(found)
	for _, f := range found {
		t.Errorf("%s: only %v enter a network namespace", f, nsEntrants)
	}
	for file := range nsEntryExceptions {
		if !excepted[file] {
			t.Errorf("%s enters no namespace now: remove it from nsEntryExceptions", file)
		}
	}
}

type nsEntry struct {
	pos  token.Pos
	what string
}

// nsEntriesIn lists a file's entries into a namespace.
func nsEntriesIn(f *ast.File, info *types.Info) []nsEntry {
	var out []nsEntry
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if what := nsEntryOf(n, info); what != "" {
				out = append(out, nsEntry{n.Pos(), what})
			}
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING &&
				(strings.HasPrefix(s, "ip netns exec") || s == "nsenter" || strings.HasPrefix(s, "nsenter ")) {
				out = append(out, nsEntry{n.Pos(), strconv.Quote(s)})
			}
		case *ast.CallExpr: // exec.Command("ip", "netns", "exec", …)
			for i := 0; i+1 < len(n.Args); i++ {
				a, b := stringLit(n.Args[i]), stringLit(n.Args[i+1])
				if a == "netns" && b == "exec" {
					out = append(out, nsEntry{n.Pos(), "ip netns exec"})
				}
			}
		}
		return true
	})
	return out
}

// nsEntryOf names what a selector enters a namespace with, or "".
func nsEntryOf(sel *ast.SelectorExpr, info *types.Info) string {
	if id, ok := sel.X.(*ast.Ident); ok {
		if pn, ok := info.Uses[id].(*types.PkgName); ok {
			p := pn.Imported().Path()
			if contains(nsEntries[p], sel.Sel.Name) {
				return path.Base(p) + "." + sel.Sel.Name
			}
			return ""
		}
	}
	s, ok := info.Selections[sel]
	if !ok || s.Obj().Pkg() == nil {
		return ""
	}
	recv := types.Unalias(s.Recv())
	if p, ok := recv.(*types.Pointer); ok {
		recv = p.Elem()
	}
	named, ok := recv.(*types.Named)
	if !ok {
		return ""
	}
	m := named.Obj().Name() + "." + s.Obj().Name()
	if contains(nsEntries[s.Obj().Pkg().Path()], m) {
		return m
	}
	return ""
}

func stringLit(e ast.Expr) string {
	if l, ok := e.(*ast.BasicLit); ok && l.Kind == token.STRING {
		s, _ := strconv.Unquote(l.Value)
		return s
	}
	return ""
}

// moduleImporter type-checks the module's own packages from their parsed
// files; every other package is opaque (what matters is which of the
// module's types a value has, e.g. *ns.NS).
type moduleImporter struct {
	fset *token.FileSet
	pkgs map[string][]*ast.File
	done map[string]*types.Package
}

func (m *moduleImporter) Import(p string) (*types.Package, error) {
	if pkg, ok := m.done[p]; ok {
		return pkg, nil
	}
	var pkg *types.Package
	if dir, ok := strings.CutPrefix(p, module); ok && m.pkgs[dir] != nil {
		conf := types.Config{Importer: m, Error: func(error) {}}
		pkg, _ = conf.Check(p, m.fset, m.pkgs[dir], nil)
	} else {
		pkg = types.NewPackage(p, path.Base(p))
		pkg.MarkComplete()
	}
	m.done[p] = pkg
	return pkg, nil
}
