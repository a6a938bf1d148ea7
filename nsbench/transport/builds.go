package transport

import (
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// Builds are one transport measured with different programs in one run,
// each a row of its own: --transports tw@old,tw@new with --build
// old:tw=/opt/tw-2.0/tw --build new:tw=./bin/tw. A build row's id is the
// transport's row id, then @LABEL: "tw@old", "ipsec:aes-gcm-128@old" (the
// variant belongs to the transport; the label names the programs it runs
// with, so it comes last). Builds share the topology and the fixtures;
// only the programs a --build names differ.

// BuildDef is one --build LABEL:OPTION=PATH: the program option OPTION
// (one of the transport's File options, e.g. tw, wireguard-go) of the
// rows labelled LABEL is PATH.
type BuildDef struct {
	Label, Option, Path string
}

var buildLabelRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,31}$`)

// ParseBuild reads one --build value.
func ParseBuild(s string) (BuildDef, error) {
	label, rest, ok := strings.Cut(s, ":")
	opt, path, ok2 := strings.Cut(rest, "=")
	if !ok || !ok2 || opt == "" || path == "" {
		return BuildDef{}, fmt.Errorf("--build %q: want LABEL:OPTION=PATH, e.g. new:tw=./bin/tw", s)
	}
	if !buildLabelRE.MatchString(label) {
		return BuildDef{}, fmt.Errorf("--build %q: label %q: want 1 to 32 of a-z 0-9 . _ - starting with a letter or digit", s, label)
	}
	// Absolute: the program starts in the role's namespace, from
	// wherever its launcher runs.
	abs, err := filepath.Abs(path)
	if err != nil {
		return BuildDef{}, fmt.Errorf("--build %q: %w", s, err)
	}
	return BuildDef{Label: label, Option: opt, Path: abs}, nil
}

// SplitBuild splits a --transports word into its row (NAME or
// NAME:VARIANT) and its build label; label is "" and at false for a word
// without @.
func SplitBuild(word string) (row, label string, at bool) {
	return strings.Cut(word, "@")
}

// CheckBuilds checks --transports words against the --build definitions:
// every label used is defined and every one defined is used, each
// definition names a program option of every transport its label is used
// with, once, and its path is an executable regular file; each transport
// with builds has exactly two, all labelled (the verdict compares build B
// with build A). It creates nothing.
func CheckBuilds(words []string, defs []BuildDef) error {
	byLabel := map[string][]BuildDef{}
	for _, d := range defs {
		for _, o := range byLabel[d.Label] {
			if o.Option == d.Option {
				return fmt.Errorf("--build %s:%s given twice", d.Label, d.Option)
			}
		}
		byLabel[d.Label] = append(byLabel[d.Label], d)
	}
	used := map[string]bool{}
	builds := map[string][]string{} // row → its labels
	var rows []string
	for _, w := range words {
		row, label, at := SplitBuild(w)
		if !at {
			continue
		}
		name, _, _ := strings.Cut(row, ":")
		s, ok := Lookup(name)
		switch {
		case label == "":
			return fmt.Errorf("--transports %q: empty build label after @ (want NAME@LABEL with --build LABEL:OPTION=PATH)", w)
		case !ok && slices.Contains(SetNames(), name):
			return fmt.Errorf("--transports %q: a set has no builds; name the transport (NAME@LABEL)", w)
		case strings.Contains(label, "@"):
			return fmt.Errorf("--transports %q: one @LABEL per row", w)
		case len(byLabel[label]) == 0:
			return fmt.Errorf("--transports %q: build %q is not defined (add --build %s:OPTION=PATH)", w, label, label)
		}
		if !ok {
			return fmt.Errorf("--transports %q: unknown transport %q", w, name)
		}
		for _, d := range byLabel[label] {
			if err := checkProgramOption(s, d); err != nil {
				return err
			}
		}
		used[label] = true
		if _, seen := builds[row]; !seen {
			rows = append(rows, row)
		}
		builds[row] = append(builds[row], label)
	}
	for _, d := range defs {
		if !used[d.Label] {
			return fmt.Errorf("--build %s:%s=%s: build %q is used by no --transports word (NAME@%s)", d.Label, d.Option, d.Path, d.Label, d.Label)
		}
		if err := checkExecutable(d.Path); err != nil {
			return fmt.Errorf("--build %s:%s=%s: %w", d.Label, d.Option, d.Path, err)
		}
	}
	for _, row := range rows {
		if slices.ContainsFunc(words, func(w string) bool { return w == row }) {
			return fmt.Errorf("--transports: %s and %s@%s: name every build of a transport with a label", row, row, builds[row][0])
		}
		if n := len(builds[row]); n != 2 {
			return fmt.Errorf("--transports: %d builds of %s (%s): the verdict compares exactly two, A and B", n, row, strings.Join(builds[row], ", "))
		}
	}
	return nil
}

// checkProgramOption checks that d names one of s's program options.
func checkProgramOption(s Spec, d BuildDef) error {
	var progs []string
	for _, o := range s.Options {
		if o.File {
			progs = append(progs, o.Name)
		}
	}
	if slices.Contains(progs, d.Option) {
		return nil
	}
	if len(progs) == 0 {
		return fmt.Errorf("--build %s:%s: transport %s runs no program that can be chosen", d.Label, d.Option, s.Name)
	}
	return fmt.Errorf("--build %s:%s: transport %s has no program option %q (it has: %s)", d.Label, d.Option, s.Name, d.Option, strings.Join(progs, ", "))
}

// checkExecutable accepts an executable regular file.
func checkExecutable(path string) error {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("not found: %w", err)
	case !st.Mode().IsRegular():
		return errors.New("not a regular file")
	case st.Mode().Perm()&0o111 == 0:
		return errors.New("not executable")
	}
	return nil
}

// Built is a transport's row as one build: the transport made with the
// build's programs, named NAME@LABEL, whose path states the build (label,
// each program's path, version and SHA-256) among its facts.
type Built struct {
	Transport
	row   string
	build results.Build
}

var _ Transport = (*Built)(nil)

// newBuilt wraps t, made with the programs defs names, as the row
// row@label.
func newBuilt(t Transport, label string, defs []BuildDef) (*Built, error) {
	b := &Built{Transport: t, row: t.Name() + "@" + label, build: results.Build{Label: label}}
	for _, d := range defs {
		sum, err := fileSHA256(d.Path)
		if err != nil {
			return nil, fmt.Errorf("--build %s:%s=%s: %w", d.Label, d.Option, d.Path, err)
		}
		b.build.Programs = append(b.build.Programs, results.BuildProgram{Option: d.Option, Path: d.Path, Version: goVersion(d.Path), SHA256: sum})
	}
	return b, nil
}

// Name is the build's row id, NAME@LABEL.
func (b *Built) Name() string { return b.row }

// Label is the transport's label with the build's.
func (b *Built) Label() string { return b.Transport.Label() + " @" + b.build.Label }

// Build is what the results record of the build.
func (b *Built) Build() results.Build {
	c := b.build
	c.Programs = slices.Clone(c.Programs)
	return c
}

// Up builds the transport's path. A program's version is the one the
// transport's own facts state under the option's name (what the program
// reports, e.g. tw's `tw version`) where they state one, else its Go build
// information's.
func (b *Built) Up(ctx context.Context, tb *Testbed) (*Path, error) {
	p, err := b.Transport.Up(ctx, tb)
	if err != nil {
		return nil, err
	}
	for i, pr := range b.build.Programs {
		if v := p.Facts.Get(pr.Option); v != "" {
			b.build.Programs[i].Version = v
		}
	}
	if p.Label != "" {
		p.Label += " @" + b.build.Label
	}
	// What the Environment shows (facts with a label) is each build's
	// own: "WireGuard @old" and "WireGuard @new", not the first one's.
	for i, f := range p.Facts {
		if f.Label != "" {
			p.Facts[i].Key += "@" + b.build.Label
			p.Facts[i].Label += " @" + b.build.Label
		}
	}
	return p, nil
}

// NeedsRoles and Prepare pass the transport's own through.
func (b *Built) NeedsRoles() []string {
	if n, ok := b.Transport.(RoleNeeder); ok {
		return n.NeedsRoles()
	}
	return nil
}

func (b *Built) Prepare(ctx context.Context, tb *Testbed) error {
	if p, ok := b.Transport.(Preparer); ok {
		return p.Prepare(ctx, tb)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// goVersion is a Go program's main module version from its build
// information, with the VCS commit when it has one; "" for another
// program (its transport's facts say its version).
func goVersion(path string) string {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return ""
	}
	return versionOf(bi)
}

// versionOf is goVersion of a program's build information.
func versionOf(bi *buildinfo.BuildInfo) string {
	v := bi.Path + " " + bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}
