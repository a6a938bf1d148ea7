package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// otherUser owns what another local user pre-made: neither root nor the
// user who ran sudo.
const otherUser = 65534

// theirDir is a directory another user made first, in a sticky
// world-writable one as /tmp is, holding links planted at the names root
// would write, and the files those links point to.
type theirDir struct {
	dir     string
	victims map[string]string // path → what it holds
}

func plantedDir(t *testing.T) theirDir {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	d := theirDir{dir: filepath.Join(tmp, "smoke"), victims: map[string]string{}}
	if err := os.Mkdir(d.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	safe := t.TempDir()
	for _, name := range []string{nsbench.ReportFile, results.FileName, "bench-report.html", "logs"} {
		victim := filepath.Join(safe, "victim-"+name)
		if err := os.WriteFile(victim, []byte("keep "+name+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		d.victims[victim] = "keep " + name + "\n"
		if err := os.Symlink(victim, filepath.Join(d.dir, name)); err != nil {
			t.Fatal(err)
		}
		os.Lchown(filepath.Join(d.dir, name), otherUser, otherUser)
	}
	if err := os.Chown(d.dir, otherUser, otherUser); err != nil {
		t.Fatal(err)
	}
	return d
}

// untouched fails the test if a planted link's target changed in content
// or mode.
func (d theirDir) untouched(t *testing.T, what string) {
	t.Helper()
	for p, want := range d.victims {
		b, err := os.ReadFile(p)
		st, _ := os.Stat(p)
		if err != nil || string(b) != want || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %s now holds %q (mode %v, %v), want %q mode 0600", what, p, b, st.Mode(), err, want)
		}
	}
}

// Another user's pre-made --out (the README's /tmp example, made first by
// someone else) is refused by every command that writes into a directory
// the user names, before anything is written; no planted link is followed.
func TestOutOfAnotherUserRefused(t *testing.T) {
	nstest.RequireRoot(t)
	t.Setenv("SUDO_UID", "")
	d := plantedDir(t)
	in := copyReference(t)
	theirIn := filepath.Join(d.dir, "in.json") // report's default --out is --in's directory
	b, _ := os.ReadFile(in)
	if err := os.WriteFile(theirIn, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "--transports", "ssh", "--quick", "--out", d.dir},
		{"run", "--transports", "ssh", "--quick", "--out", filepath.Join(d.dir, "sub")},
		{"run", "--clients", "1", "--transports", "ssh", "--out", d.dir},
		{"selfcheck", "--out", d.dir},
		{"report", "--in", in, "--out", d.dir},
		{"report", "--in", theirIn},
		{"history", "--dir", t.TempDir(), "--out", d.dir},
	} {
		code, stdout, stderr := runInProcess(args...)
		if code != exitRefused || !strings.Contains(stderr, "owned by uid 65534") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want 2 and one line naming the owner (stdout %q)", args, code, stderr, stdout)
		}
		d.untouched(t, strings.Join(args[:1], " "))
	}
	left, _ := os.ReadDir(d.dir)
	if len(left) != 5 { // the four links and in.json
		t.Errorf("%s holds %d entries after the refusals, want the 5 planted", d.dir, len(left))
	}
}

// In a directory no other user can change, links left at the report's
// names (by root, or from when the directory was another's) are replaced
// by the files, never written through.
func TestReportReplacesLinksInOut(t *testing.T) {
	nstest.RequireRoot(t)
	t.Setenv("SUDO_UID", "")
	d := plantedDir(t)
	if err := os.Chown(d.dir, 0, 0); err != nil { // root's now: accepted
		t.Fatal(err)
	}
	code, stdout, stderr := runInProcess("report", "--in", copyReference(t), "--out", d.dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	d.untouched(t, "report")
	st, err := os.Lstat(filepath.Join(d.dir, nsbench.ReportFile))
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
		t.Errorf("%s: %v %v, want a regular file of mode 0644", nsbench.ReportFile, st, err)
	}
}
