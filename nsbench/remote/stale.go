package remote

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// StaleAge is how old another run's copy must be before RemoveStaleCopies
// takes it: a copy is written seconds before it runs, and one running is
// never taken whatever its age.
const StaleAge = 10 * time.Minute

// ScopeName matches a run's part on one host, <run prefix>-<role>
// (role.Scope): the exact name of a copy's directory (Install) and of an
// agent's scope. A role may end in digits: the many-client sweep's
// client2 … clientN.
var ScopeName = regexp.MustCompile(`^` + regexp.QuoteMeta(topology.Prefix) + `[0-9a-f]{6}-[a-z][a-z0-9]{0,14}$`)

// RemoveStaleCopies removes, on this host, the copies other commands left
// under CopyRoot (a killed orchestrator never removes its own) and returns
// their directories. It runs in Go, never a shell: CopyRoot is writable by
// every local user, so a name there is data, not words. It takes only what
// Install makes: a directory (not a symlink) named exactly <run>-<role>,
// owned by root and writable by no one else, holding a regular file
// twnsbench, older than StaleAge, that no process runs a program from.
// Anything else is left alone.
func RemoveStaleCopies() ([]string, error) {
	entries, err := os.ReadDir(CopyRoot)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // no copy was ever installed here
	}
	if err != nil {
		return nil, fmt.Errorf("remove stale copies: %w", err)
	}
	running := runningExecutables()
	var removed []string
	var errs []error
	for _, e := range entries {
		dir := filepath.Join(CopyRoot, e.Name())
		if !ScopeName.MatchString(e.Name()) || !isStaleCopy(dir) || runsFrom(running, dir) {
			continue
		}
		// RemoveAll removes a symlink inside rather than following it, and
		// no one else can put anything in a root-owned 0700 directory
		// under a sticky CopyRoot, nor swap the directory itself.
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove stale copy: %w", err))
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// isStaleCopy reports whether dir is, by Lstat, a copy Install made that
// has not changed for StaleAge.
func isStaleCopy(dir string) bool {
	var st unix.Stat_t
	if unix.Lstat(dir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Uid != 0 || st.Mode&0o022 != 0 {
		return false
	}
	if time.Since(time.Unix(st.Mtim.Unix())) < StaleAge {
		return false
	}
	var bin unix.Stat_t
	return unix.Lstat(filepath.Join(dir, "twnsbench"), &bin) == nil && bin.Mode&unix.S_IFMT == unix.S_IFREG
}

// runningExecutables lists the programs every process runs (/proc/*/exe).
func runningExecutables() []string {
	exes, _ := filepath.Glob("/proc/[0-9]*/exe")
	var out []string
	for _, e := range exes {
		if p, err := os.Readlink(e); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// runsFrom reports whether any of the running programs is inside dir (an
// unlinked one reads "<path> (deleted)").
func runsFrom(running []string, dir string) bool {
	for _, p := range running {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}
