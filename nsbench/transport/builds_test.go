package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// exe writes an executable regular file and returns its path.
func exe(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("not really "+name), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseBuild(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseBuild("new:tw=./bin/tw")
	if err != nil || d != (BuildDef{Label: "new", Option: "tw", Path: filepath.Join(wd, "bin/tw")}) {
		t.Fatalf("ParseBuild = %+v, %v; want the path made absolute", d, err)
	}
	for _, bad := range []string{"", "new", "new:tw", "new:tw=", ":tw=x", "new:=x", "New:tw=x", "a b:tw=x", "-x:tw=x", "new=tw:x"} {
		if _, err := ParseBuild(bad); err == nil || !strings.HasPrefix(err.Error(), "--build ") {
			t.Errorf("ParseBuild(%q) = %v, want a --build error", bad, err)
		}
	}
}

// TestCheckBuildsRefuses: every malformed combination of --transports and
// --build is refused with its own one-line reason.
func TestCheckBuildsRefuses(t *testing.T) {
	dir := t.TempDir()
	a, b := exe(t, dir, "wg-a"), exe(t, dir, "wg-b")
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	def := func(label, opt, path string) BuildDef { return BuildDef{label, opt, path} }
	good := []BuildDef{def("a", "wireguard-go", a), def("b", "wireguard-go", b)}
	if err := CheckBuilds([]string{"wireguard-go@a", "wireguard-go@b"}, good); err != nil {
		t.Fatalf("a good pair refused: %v", err)
	}
	if err := CheckBuilds([]string{"ssh", "wireguard"}, nil); err != nil {
		t.Fatalf("no builds refused: %v", err)
	}
	for _, tc := range []struct {
		name  string
		words []string
		defs  []BuildDef
		want  string
	}{
		{"empty label", []string{"wireguard-go@", "wireguard-go@b"}, good, "empty build label"},
		{"undefined label", []string{"wireguard-go@a", "wireguard-go@c"}, good, `build "c" is not defined`},
		{"unused label", []string{"wireguard-go@a", "wireguard-go@b"}, append(good, def("c", "wireguard-go", a)), `build "c" is used by no --transports word`},
		{"option the transport lacks", []string{"wireguard-go@a", "wireguard-go@b"}, []BuildDef{def("a", "tw", a), def("b", "wireguard-go", b)}, `no program option "tw"`},
		{"transport without programs", []string{"sshuttle@a", "sshuttle@b"}, good, "runs no program that can be chosen"},
		{"ssh's programs are ssh and sshd", []string{"ssh@a", "ssh@b"}, good, `transport ssh has no program option "wireguard-go" (it has: ssh, sshd)`},
		{"not a program option", []string{"wireguard@a", "wireguard@b"}, []BuildDef{def("a", "wireguard", a), def("b", "wireguard", b)}, "runs no program that can be chosen"},
		{"same label and option twice", []string{"wireguard-go@a", "wireguard-go@b"}, append(good, def("a", "wireguard-go", b)), "--build a:wireguard-go given twice"},
		{"missing path", []string{"wireguard-go@a", "wireguard-go@b"}, []BuildDef{def("a", "wireguard-go", filepath.Join(dir, "nope")), good[1]}, "not found"},
		{"directory", []string{"wireguard-go@a", "wireguard-go@b"}, []BuildDef{def("a", "wireguard-go", dir), good[1]}, "not a regular file"},
		{"not executable", []string{"wireguard-go@a", "wireguard-go@b"}, []BuildDef{def("a", "wireguard-go", plain), good[1]}, "not executable"},
		{"one build", []string{"wireguard-go@a"}, good[:1], "1 builds of wireguard-go (a): the verdict compares exactly two"},
		{"three builds", []string{"wireguard-go@a", "wireguard-go@b", "wireguard-go@c"}, append(good, def("c", "wireguard-go", a)), "3 builds of wireguard-go"},
		{"unlabelled beside builds", []string{"wireguard-go", "wireguard-go@a", "wireguard-go@b"}, good, "name every build of a transport with a label"},
		{"set with a build", []string{"seed-002@a"}, good[:1], "a set has no builds"},
		{"unknown transport", []string{"nope@a"}, good[:1], `unknown transport "nope"`},
		{"two @", []string{"wireguard-go@a@b"}, good, "one @LABEL per row"},
	} {
		err := CheckBuilds(tc.words, tc.defs)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: CheckBuilds(%v) = %v, want one line with %q", tc.name, tc.words, err, tc.want)
		}
	}
}

// TestBuildRows: a build row is the transport made with the build's
// program, named NAME@LABEL (after a variant), its build recorded with
// the program's SHA-256; Coexist keeps two builds of one transport apart.
func TestBuildRows(t *testing.T) {
	dir := t.TempDir()
	a, b := exe(t, dir, "wg-a"), exe(t, dir, "wg-b")
	ts, err := BuildWith([]string{"wireguard-go@a", "wireguard-go@b", "ssh"}, nil,
		[]BuildDef{{"a", "wireguard-go", a}, {"b", "wireguard-go", b}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tr := range ts {
		names = append(names, tr.Name())
	}
	if strings.Join(names, ",") != "wireguard-go@a,wireguard-go@b,ssh" {
		t.Fatalf("rows %v", names)
	}
	ba, ok := ts[0].(*Built)
	if !ok {
		t.Fatalf("row %T, want *Built", ts[0])
	}
	if w := ba.Transport.(*WireGuard); w.Daemon != a {
		t.Errorf("build a runs daemon %q, want %q", w.Daemon, a)
	}
	sum := sha256.Sum256([]byte("not really wg-a"))
	got := ba.Build()
	if got.Label != "a" || len(got.Programs) != 1 || got.Programs[0].SHA256 != hex.EncodeToString(sum[:]) || got.Programs[0].Option != "wireguard-go" || got.Programs[0].Path != a {
		t.Errorf("build a = %+v", got)
	}
	if !strings.HasSuffix(ts[1].Label(), " @b") {
		t.Errorf("label %q lacks the build", ts[1].Label())
	}
	if Coexist("wireguard-go@a", "wireguard-go@b") {
		t.Error("two builds of wireguard-go coexist: they hold the same devices and port")
	}
	if s, ok := SpecOf("ipsec:aes-gcm-128@old"); !ok || s.Name != "ipsec" {
		t.Errorf("SpecOf(ipsec:aes-gcm-128@old) = %q, %v", s.Name, ok)
	}
	// The version a path states under the option's name wins over the Go
	// build information's (none here: the file is no Go program).
	fake := &Built{Transport: factsTransport{version: "wireguard-go v9"}, row: "x@a",
		build: got}
	if _, err := fake.Up(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if v := fake.Build().Programs[0].Version; v != "wireguard-go v9" {
		t.Errorf("version %q, want the path's own", v)
	}
	// The Environment's facts (those with a label) are each build's own.
	p, err := fake.Up(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Facts.Get("wireguard@a") != "wireguard-go wireguard-go v9" || p.Facts.Get("wireguard") != "" || p.Facts.Get("wireguard-go@a") != "wireguard-go v9" {
		t.Errorf("facts %+v: want the labelled one named for build a, the others kept", p.Facts)
	}
	for _, f := range p.Facts {
		if !strings.HasSuffix(f.Label, " @a") {
			t.Errorf("labelled fact %+v, want its label for build a", f)
		}
	}
}

// factsTransport is a fake whose path states a wireguard-go version.
type factsTransport struct {
	SSH
	version string
}

func (f factsTransport) Up(context.Context, *Testbed) (*Path, error) {
	p := &Path{Close: func() error { return nil }}
	p.Facts.Add(results.Fact{Key: "wireguard-go", Label: "wireguard-go", Value: f.version})
	p.Facts.Add(results.Fact{Key: "wireguard", Label: "WireGuard", Value: "wireguard-go " + f.version})
	return p, nil
}

// TestTWBuildsEnrolApart: each tw build keeps its enrolment in a directory
// of its own in every role (tw refuses to create a user twice); a tw row
// that is no build keeps tw's.
func TestTWBuildsEnrolApart(t *testing.T) {
	dir := t.TempDir()
	a, b := exe(t, dir, "tw-a"), exe(t, dir, "tw-b")
	ts, err := BuildWith([]string{"tw@old", "tw@new"}, nil, []BuildDef{{"old", "tw", a}, {"new", "tw", b}})
	if err != nil {
		t.Fatal(err)
	}
	old, nw := ts[0].(*Built).Transport.(*TW), ts[1].(*Built).Transport.(*TW)
	if old.subDir() != "tw@old" || nw.subDir() != "tw@new" || old.Bin != a || nw.Bin != b {
		t.Errorf("builds' tw dirs %q, %q and programs %q, %q", old.subDir(), nw.subDir(), old.Bin, nw.Bin)
	}
	plain, err := Build([]string{"tw"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := plain[0].(*TW).subDir(); d != "tw" {
		t.Errorf("tw's dir %q, want tw", d)
	}
}

// plainTransport has no many-client form: only Transport's methods.
type plainTransport struct{ Transport }

// fanTransport is a Fanner whose fan names itself.
type fanTransport struct{ Transport }

func (fanTransport) FanUp(context.Context, *Testbed, []string, []int) (*Fan, error) {
	return &Fan{Label: "one session per client"}, nil
}

// TestBuildFans: a build's row has its transport's many-client form, or
// none when its transport has none, and its fan's label names the build.
func TestBuildFans(t *testing.T) {
	dir := t.TempDir()
	ts, err := BuildWith([]string{"wireguard-go@a", "ssh"}, nil, []BuildDef{{"a", "wireguard-go", exe(t, dir, "wg-a")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range ts {
		if _, ok := FannerOf(tr); !ok {
			t.Errorf("%s: no many-client form", tr.Name())
		}
	}
	if _, ok := FannerOf(&Built{Transport: plainTransport{SSH{}}, row: "x@a"}); ok {
		t.Error("a build of a transport without a many-client form has one")
	}
	f, ok := FannerOf(&Built{Transport: fanTransport{SSH{}}, row: "x@a", build: results.Build{Label: "a"}})
	if !ok {
		t.Fatal("a build of a Fanner has no many-client form")
	}
	fan, err := f.FanUp(t.Context(), nil, nil, nil)
	if err != nil || fan.Label != "one session per client @a" {
		t.Errorf("fan %+v, %v; want the label with @a", fan, err)
	}
}
