package main

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// exitCodeConstants are the command's exit codes as main.go defines them:
// every constant named exit…, by name.
func exitCodeConstants(t *testing.T) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "exit") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.INT {
					t.Fatalf("%s is not an integer literal: the test reads only those", name.Name)
				}
				n, _ := constant.Int64Val(constant.MakeFromLiteral(lit.Value, lit.Kind, 0))
				codes[name.Name] = int(n)
			}
		}
	}
	return codes
}

var tableCode = regexp.MustCompile(`^\|\s*(\d+)\s*\|`)

// exitCodeTableProblems compares the exit codes a page's table lists
// (rows starting with a number) with codes: each code must have one row,
// and each row a code.
func exitCodeTableProblems(page string, codes map[string]int) []string {
	listed := map[int]int{}
	for _, l := range strings.Split(page, "\n") {
		if m := tableCode.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			listed[n]++
		}
	}
	var problems []string
	names := make([]string, 0, len(codes))
	for name := range codes {
		names = append(names, name)
	}
	slices.Sort(names)
	want := map[int]bool{}
	for _, name := range names {
		c := codes[name]
		want[c] = true
		switch listed[c] {
		case 0:
			problems = append(problems, "exit "+strconv.Itoa(c)+" ("+name+") is not in the table")
		case 1:
		default:
			problems = append(problems, "exit "+strconv.Itoa(c)+" ("+name+") has more than one row")
		}
	}
	for c := range listed {
		if !want[c] {
			problems = append(problems, "the table lists exit "+strconv.Itoa(c)+", which the command does not define")
		}
	}
	slices.Sort(problems)
	return problems
}

// TestExitCodeTable: docs/exit-codes.md lists every exit code the command
// defines, once, and no other; no other page has an exit-code table of
// its own (they link to that one).
func TestExitCodeTable(t *testing.T) {
	codes := exitCodeConstants(t)
	if len(codes) < 6 {
		t.Fatalf("found the exit codes %v in main.go: want at least 6, the pattern no longer matches", codes)
	}
	page, err := os.ReadFile("../../docs/exit-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range exitCodeTableProblems(string(page), codes) {
		t.Error("docs/exit-codes.md: " + p)
	}
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(pages, "../../README.md") {
		if filepath.Base(p) == "exit-codes.md" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if h := strings.ToLower(strings.TrimSpace(l)); strings.HasPrefix(h, "| exit ") || strings.HasPrefix(h, "| exit|") {
				t.Errorf("%s has an exit-code table of its own (%q): link docs/exit-codes.md instead", p, l)
			}
		}
	}
}

// The comparison fails on a code missing, a code twice and a code the
// command does not define.
func TestExitCodeTableCatchesDrift(t *testing.T) {
	codes := map[string]int{"exitOK": 0, "exitFailed": 1, "exitNew": 5}
	page := "| exit | meaning |\n|---|---|\n| 0 | done |\n| 1 | failed |\n| 1 | again |\n| 7 | stale |\n"
	got := exitCodeTableProblems(page, codes)
	want := []string{
		"exit 1 (exitFailed) has more than one row",
		"exit 5 (exitNew) is not in the table",
		"the table lists exit 7, which the command does not define",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%q\nwant:\n%q", got, want)
	}
	if got := exitCodeTableProblems("| 0 | done |\n| 1 | failed |\n| 5 | new |\n", codes); len(got) != 0 {
		t.Errorf("a complete table: %q", got)
	}
}

// modulePackages are the module's package directories relative to its
// root ("nsbench/role", "wg"): every directory holding a Go file, test
// data and hidden directories aside.
func modulePackages(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for p := range seen {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	return pkgs
}

var packageRow = regexp.MustCompile("^\\|[^|]*\\|\\s*`([^`]+)`\\s*\\|")

// designPackageProblems compares the packages design.md's table names
// (its second column) with pkgs: each package one row, each row a package.
func designPackageProblems(page string, pkgs []string) []string {
	named := map[string]int{}
	for _, l := range strings.Split(page, "\n") {
		if m := packageRow.FindStringSubmatch(l); m != nil {
			named[m[1]]++
		}
	}
	var problems []string
	for _, p := range pkgs {
		switch named[p] {
		case 0:
			problems = append(problems, p+" is not in the table")
		case 1:
		default:
			problems = append(problems, p+" has more than one row")
		}
	}
	for p := range named {
		if !slices.Contains(pkgs, p) {
			problems = append(problems, "the table names "+p+", which is no package of the module")
		}
	}
	slices.Sort(problems)
	return problems
}

// TestDesignNamesEveryPackage: docs/design.md's package table has a row
// for every package of the module and none for a package that is gone.
func TestDesignNamesEveryPackage(t *testing.T) {
	pkgs := modulePackages(t, "../..")
	if !slices.Contains(pkgs, "cmd/twnsbench") || !slices.Contains(pkgs, "nsbench/role") || len(pkgs) < 20 {
		t.Fatalf("found the packages %v: the walk no longer finds the module's", pkgs)
	}
	page, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range designPackageProblems(string(page), pkgs) {
		t.Error("docs/design.md: " + p)
	}
}

func TestDesignPackageTableCatchesDrift(t *testing.T) {
	page := "| level | package | concept |\n|---|---|---|\n| 0 | `a` | x |\n| 1 | `gone` | y |\n| 1 | `a` | again |\n"
	got := designPackageProblems(page, []string{"a", "b"})
	want := []string{"a has more than one row", "b is not in the table", "the table names gone, which is no package of the module"}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%q\nwant:\n%q", got, want)
	}
}
