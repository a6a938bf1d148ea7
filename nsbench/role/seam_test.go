package role_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxRoleMethods is the width of the seam: a Role is who a role is and
// its processes; what else is done in a role is a function over it.
const maxRoleMethods = 12

// TestFilesFormNoCycle: the files of package role (tests aside) depend on
// each other without a cycle.
//
// Inside one package Go has no imports between files, so "file A depends
// on file B" is taken to mean: A uses a name declared in B — a type, a
// function, a variable or constant, a method or a struct field, resolved
// by the type checker (a method or field name alone says nothing: Name is
// a Role's and an Op's). The package is built as layers of files, lowest
// first:
//
//	op.go, bounds.go        the op registry (names → code, JSON in and out)
//	                        and what an agent's requests may reach
//	host.go                 where a role's work is carried out (nsHost), and
//	                        host ops on a machine (Machine, Here, HostOp.On)
//	role.go                 the facade: Role, and Op.On carrying an op out in one
//	files.go, counters.go,  a role's files, counters and loopback addresses:
//	loopback.go             functions over a Role
//	wire.go                 the orchestrator's end of the wire (Wire, Via)
//	serve.go                the agent: the far end of the wire
//	tree.go, remote.go      building roles, here or on a host over a Wire
//
// A lower file never uses a higher one's names: the registry knows no
// Role and no Wire, the facade no wire, the wire no agent. A cycle of
// files would mean one of them cannot be read, or moved to a package of
// its own, without the others.
func TestFilesFormNoCycle(t *testing.T) {
	deps := fileDeps(t)
	files := make([]string, 0, len(deps))
	for f := range deps {
		files = append(files, f)
	}
	slices.Sort(files)
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(f string)
	visit = func(f string) {
		state[f] = open
		stack = append(stack, f)
		for _, g := range sortedKeys(deps[f]) {
			switch state[g] {
			case open:
				i := slices.Index(stack, g)
				var steps []string
				for j, a := range stack[i:] {
					b := g
					if i+j+1 < len(stack) {
						b = stack[i+j+1]
					}
					steps = append(steps, fmt.Sprintf("%s uses %s of %s", a, deps[a][b], b))
				}
				t.Errorf("files of package role form a cycle: %s", strings.Join(steps, "; "))
			case unseen:
				visit(g)
			}
		}
		stack = stack[:len(stack)-1]
		state[f] = done
	}
	for _, f := range files {
		if state[f] == unseen {
			visit(f)
		}
	}
	// The check sees the package: these edges exist by design.
	for _, e := range [][2]string{{"role.go", "op.go"}, {"serve.go", "wire.go"}, {"wire.go", "role.go"}} {
		if deps[e[0]][e[1]] == "" {
			t.Errorf("no dependency found of %s on %s: the check no longer reads the package", e[0], e[1])
		}
	}
}

// TestRoleIsNarrow: Role has at most maxRoleMethods methods.
func TestRoleIsNarrow(t *testing.T) {
	fset := token.NewFileSet()
	var methods []string
	for _, f := range parseRole(t, fset) {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil {
				continue
			}
			recv := fd.Recv.List[0].Type
			if s, ok := recv.(*ast.StarExpr); ok {
				recv = s.X
			}
			if id, ok := recv.(*ast.Ident); ok && id.Name == "Role" {
				methods = append(methods, fd.Name.Name)
			}
		}
	}
	if len(methods) > maxRoleMethods || len(methods) == 0 {
		t.Errorf("Role has %d methods (%s), want 1 to %d", len(methods), strings.Join(methods, ", "), maxRoleMethods)
	}
}

// fileDeps is, per file of package role (tests aside), the files whose
// names it uses, each with the first such name.
func fileDeps(t *testing.T) map[string]map[string]string {
	fset := token.NewFileSet()
	files := parseRole(t, fset)
	// Imported packages are stood in for by empty ones: the check is of
	// the package's own names, and type-checking its imports from source
	// would take seconds. References into them fail to resolve, and those
	// errors are expected; every name of the package itself resolves.
	conf := types.Config{
		Importer: importerFunc(func(p string) (*types.Package, error) {
			name := path.Base(p)
			if strings.HasPrefix(name, "v") && strings.Trim(name[1:], "0123456789") == "" {
				name = path.Base(path.Dir(p))
			}
			pkg := types.NewPackage(p, name)
			pkg.MarkComplete()
			return pkg, nil
		}),
		Error: func(error) {},
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	pkg, _ := conf.Check("github.com/twnsbench/twnsbench/nsbench/role", fset, files, info)
	deps := map[string]map[string]string{}
	for _, f := range files {
		deps[filepath.Base(fset.Position(f.Pos()).Filename)] = map[string]string{}
	}
	use := func(at token.Pos, obj types.Object) {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			return
		}
		if _, local := obj.(*types.PkgName); local {
			return
		}
		from := filepath.Base(fset.Position(at).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		// A name declared inside a function (a variable, a parameter)
		// is its own file's; a package-level one's scope is the
		// package's.
		if from == to || obj.Parent() != nil && obj.Parent() != pkg.Scope() {
			return
		}
		if _, ok := deps[from][to]; !ok {
			deps[from][to] = obj.Name()
		}
	}
	for id, obj := range info.Uses {
		use(id.Pos(), obj)
	}
	for sel, s := range info.Selections {
		use(sel.Sel.Pos(), s.Obj())
	}
	return deps
}

func parseRole(t *testing.T, fset *token.FileSet) []*ast.File {
	t.Helper()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("no files of package role found")
	}
	return files
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
