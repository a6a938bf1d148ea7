package transport

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/textsafe"
)

// Builds across hosts: a build's programs are chosen on the machine the
// run starts from. With roles on other hosts each program is copied to the
// host of every role that runs it (Option.Roles), beside that host's copy
// of twnsbench, and that host runs its copy: the transport asks the
// testbed for the program as a role's host has it (Testbed.ProgramAt).

// Copies are the build programs copied to the roles' hosts: for each role,
// a program's path on this machine → its copy on the role's host.
type Copies map[string]map[string]string

// ProgramAt is the program at path as role's host runs it: its copy there
// for a build's program copied to another host, else path itself (a
// system program's name, or a path on the machine that runs it).
func (e *Testbed) ProgramAt(role, path string) string {
	if c, ok := e.Copies[role][path]; ok {
		return c
	}
	return path
}

// ProgramRoles are the roles that run the build's program chosen by
// option (its Option.Roles), none for an option the transport has not.
func (b *Built) ProgramRoles(option string) []string {
	s, ok := SpecOf(b.row)
	if !ok {
		return nil
	}
	for _, o := range s.Options {
		if o.Name == option && o.File {
			return o.Roles
		}
	}
	return nil
}

// PlaceCopy records that a role's host ran the build's program of option
// as c (its copy there, read there). Call it before the run starts: a
// Built is not guarded for concurrent use.
func (b *Built) PlaceCopy(option string, c results.ProgramCopy) {
	for i, p := range b.build.Programs {
		if p.Option == option {
			b.build.Programs[i].Hosts = append(b.build.Programs[i].Hosts, c)
		}
	}
}

// copiedProgramPrefix starts the name of every build program copied
// beside twnsbench on a host (CopiedName).
const copiedProgramPrefix = "build-"

// CopiedName is the file name of a build's program on another host,
// beside its copy of twnsbench: made of the build's label and the option
// (both checked words), never of the program's own name.
func CopiedName(label, option string) string { return copiedProgramPrefix + label + "-" + option }

// maxVersionLen bounds a program's version as a host states it.
const maxVersionLen = 256

// programVersionOp reads the Go version (goVersion) of a build's program
// copied beside the agent's own binary on its host. It reads nothing
// else: a path that is not a plain file of that name there, or a link, is
// refused.
var programVersionOp = role.NewHostOp("transport.program-version", func(_ context.Context, path string) (string, error) {
	if err := checkCopiedPath(path); err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file", path)
	}
	bi, err := buildinfo.Read(f)
	if err != nil {
		return "", nil // no Go program: its transport's facts say its version
	}
	return versionOf(bi), nil
})

// checkCopiedPath accepts a build program copied beside this process's
// own binary (a host's copy of twnsbench): that directory, a name
// CopiedName makes.
func checkCopiedPath(path string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || filepath.Dir(path) != filepath.Dir(self) ||
		!strings.HasPrefix(filepath.Base(path), copiedProgramPrefix) {
		return fmt.Errorf("%s is not a build's program beside this copy of twnsbench (%s)", path, filepath.Dir(self))
	}
	return nil
}

// ProgramVersionOn reads the Go version of a build's program copied to
// machine m, at path beside its copy of twnsbench, as m reads it: "" for a
// program without Go build information. What m answers is data: a
// version longer than a version is refused, and control characters come
// back escaped.
func ProgramVersionOn(ctx context.Context, m role.Machine, path string) (string, error) {
	v, err := programVersionOp.On(ctx, m, path)
	if err != nil {
		return "", err
	}
	return hostVersion(path, v)
}

// hostVersion is v, the version a host stated for its program at path,
// made safe to keep: refused past maxVersionLen, control characters
// escaped.
func hostVersion(path, v string) (string, error) {
	if len(v) > maxVersionLen {
		return "", fmt.Errorf("%s: a version of %d bytes: refused", path, len(v))
	}
	return textsafe.Quote(v), nil
}
