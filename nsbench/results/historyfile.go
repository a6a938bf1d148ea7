package results

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/twnsbench/twnsbench/nsbench/safedir"
)

// HistoryExt ends every history file's name: DIR/<fingerprint>.jsonl.
const HistoryExt = ".jsonl"

// maxHistoryLine bounds a line read back: a history is someone's file, and
// one cell's line is a few hundred bytes.
const maxHistoryLine = 1 << 20

// CheckHistoryDir refuses a history directory that another user could
// use to make root write elsewhere or forge the history: a symlink, not a
// directory, writable by its group or others, or (forWrite) owned by
// someone but this process's user, or with an ancestor another user could
// change (safedir.Check). A directory that does not exist yet is accepted
// when forWrite (AppendHistory creates it) if its nearest existing
// ancestor passes; reading needs it to exist. It creates nothing.
func CheckHistoryDir(dir string, forWrite bool) error {
	if dir == "" {
		return errors.New("history directory: empty path")
	}
	if err := safedir.Check("history directory", dir); err != nil {
		return err
	}
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) && forWrite {
		return nil
	}
	if err != nil {
		return fmt.Errorf("history directory %s: %w", dir, err)
	}
	if err := safeEntry(dir, st, forWrite); err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("history directory %s: not a directory", dir)
	}
	return nil
}

// safeEntry refuses a symlink, an entry writable by group or others, and
// (forWrite) one owned by someone but this process's user.
func safeEntry(path string, st fs.FileInfo, forWrite bool) error {
	if st.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("history %s: a symlink, refused (give the directory it points to)", path)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("history %s: writable by group or others (mode %04o), refused: chmod go-w it", path, st.Mode().Perm())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && forWrite && int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("history %s: owned by uid %d, not by this user (uid %d), refused: chown it", path, sys.Uid, os.Geteuid())
	}
	return nil
}

// AppendHistory appends lines to dir/<fingerprint>.jsonl, one write per
// line on a file opened with O_APPEND (so lines of runs appending at once
// never interleave within a line), creating dir (0755) and the file (0644)
// when needed. It follows no symlink and refuses a file that is not a
// regular file of this user's with one link (a hard link to another
// file). It returns the file's path.
func AppendHistory(dir string, lines []HistoryLine) (string, error) {
	if len(lines) == 0 {
		return "", nil
	}
	// Open refuses what another user could change before it makes
	// anything; the history's own rules (this user's directory) are
	// checked on what it found or made.
	d, err := safedir.Open("history directory", dir)
	if err != nil {
		return "", err
	}
	defer d.Close()
	if err := CheckHistoryDir(dir, true); err != nil {
		return "", err
	}
	name := lines[0].Fingerprint + HistoryExt
	path := filepath.Join(dir, name)
	f, err := d.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return "", fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("open history: %w", err)
	}
	if err := safeEntry(path, st, true); err != nil {
		return "", err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !st.Mode().IsRegular() || ok && sys.Nlink != 1 {
		return "", fmt.Errorf("history %s: not a regular file with one link, refused", path)
	}
	for _, l := range lines {
		if l.Fingerprint != lines[0].Fingerprint {
			return "", fmt.Errorf("append history: lines of two fingerprints (%s, %s)", lines[0].Fingerprint, l.Fingerprint)
		}
		b, err := json.Marshal(l)
		if err != nil {
			return "", fmt.Errorf("encode history line: %w", err)
		}
		if _, err := f.Write(append(b, '\n')); err != nil {
			return "", fmt.Errorf("append history: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("append history: %w", err)
	}
	return path, nil
}

// History is what a history directory holds.
type History struct {
	Lines []HistoryLine
	// Unreadable counts lines that are not history lines (a torn or
	// foreign line): they are left out, and the report says how many.
	Unreadable int
}

// ReadHistory reads every DIR/*.jsonl (after CheckHistoryDir; a symlink
// among them is refused), in name order, lines in file order.
func ReadHistory(dir string) (History, error) {
	var h History
	if err := CheckHistoryDir(dir, false); err != nil {
		return h, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return h, fmt.Errorf("read history: %w", err)
	}
	names := []string{}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), HistoryExt) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if err := readHistoryFile(filepath.Join(dir, n), &h); err != nil {
			return h, err
		}
	}
	return h, nil
}

func readHistoryFile(path string, h *History) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return fmt.Errorf("history %s: a symlink, refused", path)
		}
		return fmt.Errorf("read history: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("history %s: not a regular file", path)
	}
	if err := ScanHistory(f, h); err != nil {
		return fmt.Errorf("read history %s: %w", path, err)
	}
	return nil
}

// ScanHistory reads history lines from r into h, counting a line that is
// not one (a torn or foreign line) in h.Unreadable; a line longer than
// maxHistoryLine ends it with an error.
func ScanHistory(r io.Reader, h *History) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxHistoryLine)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var l HistoryLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Fingerprint == "" || l.Time == "" {
			h.Unreadable++
			continue
		}
		h.Lines = append(h.Lines, l)
	}
	return sc.Err()
}
