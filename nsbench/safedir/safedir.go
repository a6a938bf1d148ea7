// Package safedir is where twnsbench, running as root, writes files a user
// named: the output directory, a history directory, the directory a report
// is rendered into. Root writing into a directory another local user can
// change is a way for that user to make root write anywhere: a planted
// `bench-report.md -> /etc/passwd`, a directory swapped for a link between a
// check and a write. So a directory is used only when it and every one of
// its ancestors can be changed by nobody but a trusted user (root, this
// process's user, and the user who ran sudo, who could run anything as
// root anyway), and every file is written through an opened root (os.Root),
// created new and renamed into place, its mode set on the open file.
package safedir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Trusted reports whether uid may own a directory (or a file) root writes
// through: root, this process's user, or the user sudo ran it for.
func Trusted(uid uint32) bool {
	if uid == 0 || int(uid) == os.Geteuid() {
		return true
	}
	su, ok := SudoUID()
	return ok && su == uid
}

// SudoUID is the user who ran this process through sudo ($SUDO_UID), when
// it runs as root: only root can set a root process's environment, so the
// value is as trusted as the process.
func SudoUID() (uint32, bool) {
	if os.Geteuid() != 0 {
		return 0, false
	}
	s := os.Getenv("SUDO_UID")
	if s == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return uint32(n), true
}

// Check refuses dir when another user could change it or any of its
// ancestors: an existing directory must be a directory owned by a trusted
// user and writable by nobody else; each ancestor likewise, except that an
// ancestor with the sticky bit (/tmp) may be writable by all, since there
// nobody may rename or remove what another owns. A path that does not
// exist yet is accepted if its nearest existing ancestor passes (Open
// creates the rest and checks again). Symbolic links among the ancestors
// are resolved first and the directories they lead to are checked; dir
// itself may not be a link. what names the setting in errors ("--out").
// Check creates nothing.
func Check(what, dir string) error {
	_, err := check(what, dir)
	return err
}

// check returns the stat of dir when it exists.
func check(what, dir string) (*syscall.Stat_t, error) {
	if dir == "" {
		return nil, fmt.Errorf("%s: empty path", what)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, dir, err)
	}
	// The nearest existing ancestor, then every directory above it.
	var missing []string
	p := abs
	for {
		_, err := os.Lstat(p)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s %s: %w", what, dir, err)
		}
		missing = append(missing, filepath.Base(p))
		if filepath.Dir(p) == p {
			return nil, fmt.Errorf("%s %s: no existing parent directory", what, dir)
		}
		p = filepath.Dir(p)
	}
	var self *syscall.Stat_t
	if len(missing) == 0 {
		// dir exists: it may not be a link (a link's target is what a
		// user would have to name).
		st, err := lstat(abs)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, dir, err)
		}
		if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			return nil, fmt.Errorf("%s %s: a symbolic link, refused: name the directory it points to", what, dir)
		}
		self = st
		if err := safe(st, false); err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, dir, err)
		}
		p = filepath.Dir(abs)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, dir, err)
	}
	for q := real; ; q = filepath.Dir(q) {
		st, err := lstat(q)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %s: %w", what, dir, q, err)
		}
		// In a sticky ancestor another user may pre-make the name Open is
		// about to create: Open checks again what it found or made.
		if err := safe(st, true); err != nil {
			return nil, fmt.Errorf("%s %s: %s %w", what, dir, q, err)
		}
		if filepath.Dir(q) == q {
			break
		}
	}
	return self, nil
}

// safe refuses what is not a directory a trusted user owns and nobody else
// can write (or, with sticky allowed, a sticky directory anyone can).
func safe(st *syscall.Stat_t, stickyOK bool) error {
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return errors.New("is not a directory")
	}
	if !Trusted(st.Uid) {
		return fmt.Errorf("is owned by uid %d, another user, who could plant links in it for root to follow: refused (use a directory of root's or your own)", st.Uid)
	}
	if st.Mode&0o022 != 0 && !(stickyOK && st.Mode&syscall.S_ISVTX != 0) {
		return fmt.Errorf("is writable by its group or others (mode %04o): refused (chmod go-w it, or use another directory)", st.Mode&0o7777)
	}
	return nil
}

func lstat(p string) (*syscall.Stat_t, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	return &st, nil
}

// Dir is a checked directory, opened: every name is resolved inside it
// (os.Root), so no link leads a write out of it.
type Dir struct {
	path string
	root *os.Root
}

// Open checks dir (Check), creates what is missing of it (0755) and opens
// it. The directory opened is the one checked: a directory put in its
// place between the check and the open is refused.
func Open(what, dir string) (*Dir, error) {
	if err := Check(what, dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s %s: cannot create it: %w", what, dir, err)
	}
	st, err := check(what, dir) // what MkdirAll found or made
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, dir, err)
	}
	fi, err := r.Stat(".")
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if got, ok := fi.Sys().(*syscall.Stat_t); !ok || got.Dev != st.Dev || got.Ino != st.Ino {
		r.Close()
		return nil, fmt.Errorf("%s %s: replaced while it was being opened, refused", what, dir)
	}
	return &Dir{path: dir, root: r}, nil
}

// Path is the directory's path as given.
func (d *Dir) Path() string { return d.path }

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// WriteFile writes name (a path inside d) as a new file renamed into
// place: a link or a file planted at name is replaced, never written
// through, and a reader never sees half a file. The mode is set on the
// open file, not by path.
func (d *Dir) WriteFile(name string, data []byte, perm fs.FileMode) error {
	tmp, err := d.create(name)
	if err != nil {
		return err
	}
	f := tmp.f
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.root.Rename(tmp.name, name)
	}
	if err != nil {
		d.root.Remove(tmp.name)
		return fmt.Errorf("write %s: %w", filepath.Join(d.path, name), err)
	}
	return nil
}

type tempFile struct {
	f    *os.File
	name string
}

// create makes a new, exclusive temporary file beside name.
func (d *Dir) create(name string) (tempFile, error) {
	dir, base := filepath.Split(name)
	for range 10 {
		var b [6]byte
		rand.Read(b[:])
		tmp := filepath.Join(dir, "."+base+"."+hex.EncodeToString(b[:])+".tmp")
		f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return tempFile{}, fmt.Errorf("write %s: %w", filepath.Join(d.path, name), err)
		}
		return tempFile{f: f, name: tmp}, nil
	}
	return tempFile{}, fmt.Errorf("write %s: no free temporary name", filepath.Join(d.path, name))
}

// OpenFile opens name inside d (os.Root.OpenFile): for a file that is
// appended to rather than replaced, such as a history.
func (d *Dir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return d.root.OpenFile(name, flag, perm)
}

// Remove removes name; a name already absent is no error.
func (d *Dir) Remove(name string) error {
	if err := d.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", filepath.Join(d.path, name), err)
	}
	return nil
}

// MkdirAll makes name and its parents inside d.
func (d *Dir) MkdirAll(name string, perm fs.FileMode) error {
	if err := d.root.MkdirAll(name, perm); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Join(d.path, name), err)
	}
	return nil
}

// Mkdir makes name, which must not exist: a directory the run owns alone.
func (d *Dir) Mkdir(name string, perm fs.FileMode) error {
	if err := d.root.Mkdir(name, perm); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Join(d.path, name), err)
	}
	return nil
}

// WriteFileIn opens dir (Open) and writes one file in it (WriteFile).
func WriteFileIn(what, dir, name string, data []byte, perm fs.FileMode) error {
	d, err := Open(what, dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(name, data, perm)
}

// MkdirAllIn opens dir (Open) and makes name and its parents in it.
func MkdirAllIn(what, dir, name string, perm fs.FileMode) error {
	d, err := Open(what, dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.MkdirAll(name, perm)
}

// AppendTo opens an existing file for appending without following a link,
// and refuses anything but a regular file with one link that a trusted
// user owns: a file named by the environment ($GITHUB_STEP_SUMMARY) is
// someone's word, and root must not append to /etc/passwd through it.
func AppendTo(what, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s %s: a symbolic link, refused", what, path)
		}
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular() || !ok:
		err = errors.New("not a regular file, refused")
	case st.Nlink != 1:
		err = fmt.Errorf("has %d links, refused", st.Nlink)
	case !Trusted(st.Uid):
		err = fmt.Errorf("owned by uid %d, not by root or the user who ran twnsbench, refused", st.Uid)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return f, nil
}
