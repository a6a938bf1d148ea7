package safedir

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// other is a user who is neither root nor the one who ran sudo.
const other = 65534

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: chowns directories to another user")
	}
	t.Setenv("SUDO_UID", "")
}

func TestCheckRefusesWhatAnotherUserCanChange(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	mk := func(name string, mode os.FileMode, uid int) string {
		p := filepath.Join(root, name)
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // Mkdir's mode passes the umask
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	theirs := mk("theirs", 0o755, other)
	open := mk("open", 0o777, 0)
	sticky := mk("sticky", os.ModeSticky|0o777, 0)
	ours := mk("ours", 0o755, 0)
	link := filepath.Join(root, "link")
	if err := os.Symlink(ours, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{theirs, "owned by uid 65534"},
		{filepath.Join(theirs, "new"), "owned by uid 65534"},
		{filepath.Join(theirs, "a", "b"), "owned by uid 65534"},
		{open, "writable by its group or others"},
		{filepath.Join(open, "new"), "writable by its group or others"},
		{sticky, "writable by its group or others"}, // the directory itself: others could plant in it
		{link, "a symbolic link"},
		{"", "empty path"},
	} {
		err := Check("--out", c.dir)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "--out") {
			t.Errorf("Check(%q) = %v, want an error saying %q", c.dir, err, c.want)
		}
	}
	for _, ok := range []string{ours, filepath.Join(ours, "new", "deeper"), filepath.Join(sticky, "new"), filepath.Join(link, "new")} {
		if err := Check("--out", ok); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
	if _, err := os.Stat(filepath.Join(ours, "new")); err == nil {
		t.Error("Check created a directory")
	}
}

func TestSudoUserIsTrusted(t *testing.T) {
	needRoot(t)
	dir := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, other, other); err != nil {
		t.Fatal(err)
	}
	if Check("--out", dir) == nil {
		t.Fatal("accepted another user's directory")
	}
	t.Setenv("SUDO_UID", "65534") // that user ran sudo: root is theirs already
	if err := Check("--out", dir); err != nil {
		t.Errorf("refused the sudo user's own directory: %v", err)
	}
}

// A directory that passed the check may still hold links made before (by
// root, or while it was another's): a write replaces them and never
// writes through them.
func TestWriteFileReplacesPlantedLinks(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	victim := filepath.Join(root, "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(out, "bench-report.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(out, "logs")); err != nil { // a link out of the directory
		t.Fatal(err)
	}
	d, err := Open("--out", out)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.WriteFile("bench-report.md", []byte("report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteFile("logs/victim", []byte("through\n"), 0o644); err == nil {
		t.Error("wrote through a link leading out of the directory")
	}
	if err := d.MkdirAll("logs/run", 0o755); err == nil {
		t.Error("made a directory through a link leading out of the directory")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if st, _ := os.Stat(victim); st.Mode().Perm() != 0o600 {
		t.Errorf("the link's target's mode changed to %04o", st.Mode().Perm())
	}
	st, err := os.Lstat(filepath.Join(out, "bench-report.md"))
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
		t.Errorf("bench-report.md: %v, %v; want a regular file, mode 0644", st, err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "bench-report.md")); string(b) != "report\n" {
		t.Errorf("bench-report.md holds %q", b)
	}
	left, _ := filepath.Glob(filepath.Join(out, ".*.tmp"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestOpenRefusesAnotherUsersPreMadeDirectory(t *testing.T) {
	needRoot(t)
	sticky := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(sticky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(sticky, "smoke")
	if err := os.Mkdir(out, 0o755); err != nil { // the other user was first
		t.Fatal(err)
	}
	if err := os.Chown(out, other, other); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("--out", out); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("Open of another user's pre-made directory: %v", err)
	}
	mine := filepath.Join(sticky, "mine", "sub")
	d, err := Open("--out", mine)
	if err != nil {
		t.Fatalf("Open of a new directory under a sticky one: %v", err)
	}
	d.Close()
	if st, err := os.Stat(mine); err != nil || !st.IsDir() || st.Mode().Perm() != 0o755 {
		t.Errorf("made %v, %v", st, err)
	}
}

func TestAppendToRefusesLinksAndOthersFiles(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	victim := filepath.Join(root, "passwd")
	os.WriteFile(victim, []byte("root:x:0:0\n"), 0o644)
	link := filepath.Join(root, "link")
	os.Symlink(victim, link)
	hard := filepath.Join(root, "hard")
	os.Link(victim, hard)
	theirs := filepath.Join(root, "theirs")
	os.WriteFile(theirs, nil, 0o644)
	os.Chown(theirs, other, other)
	fifo := filepath.Join(root, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{link, "a symbolic link"},
		{hard, "2 links"},
		{theirs, "owned by uid 65534"},
		{fifo, "no such device"}, // no reader: the open fails rather than blocks
		{filepath.Join(root, "missing"), "no such file"},
	} {
		if f, err := AppendTo("$GITHUB_STEP_SUMMARY", c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			if f != nil {
				f.Close()
			}
			t.Errorf("AppendTo(%s) = %v, want an error saying %q", c.path, err, c.want)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "root:x:0:0\n" {
		t.Errorf("victim written: %q", b)
	}
	own := filepath.Join(root, "summary")
	os.WriteFile(own, []byte("a\n"), 0o644)
	f, err := AppendTo("$GITHUB_STEP_SUMMARY", own)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("b\n")
	f.Close()
	if b, _ := os.ReadFile(own); string(b) != "a\nb\n" {
		t.Errorf("summary holds %q", b)
	}
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o644) }
