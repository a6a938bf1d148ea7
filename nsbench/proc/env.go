package proc

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// keptVars are the harness's variables that every program it starts
// keeps: where programs are and how to speak the locale. The rest of the
// operator's environment (SSH_AUTH_SOCK, tokens, proxies, TMPDIR, LD_*)
// never reaches a program run as root; what a program needs beyond these,
// its Program.Env says.
var keptVars = []string{"PATH", "LANG", "LANGUAGE", "TZ"}

// Environ is the environment of a program the harness starts: the kept
// variables of its own, HOME as the passwd database has it for the user
// the program runs as (not an inherited one, which sudo -E or a login
// keeps pointing at the operator's home), then extra (later wins).
func Environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "LC_") || slices.Contains(keptVars, k) {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home())
	return append(env, extra...)
}

// home is the effective user's home directory, "/" when it has none.
func home() string {
	if u, err := user.LookupId(strconv.Itoa(os.Geteuid())); err == nil && u.HomeDir != "" {
		return u.HomeDir
	}
	return "/"
}

// RootsPath checks a path that variable (an environment variable) names
// and that root will run a program from: it, after symlinks, and every
// directory above it must be root's and writable by no one else (a
// directory with the sticky bit, /tmp, may be: no one else can rename
// or remove root's entries there). Otherwise another user could swap
// the program root runs. The error is one line naming the variable.
func RootsPath(variable, path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("$%s=%s: %w", variable, path, err)
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return fmt.Errorf("$%s=%s: %w", variable, path, err)
	}
	for p := real; ; p = filepath.Dir(p) {
		if err := rootsOnly(p); err != nil {
			return fmt.Errorf("$%s=%s refused: %s %w; root runs programs only from root's files", variable, path, p, err)
		}
		if p == "/" {
			return nil
		}
	}
}

// rootsOnly: p is owned by root and only root can change it or its
// entries.
func rootsOnly(p string) error {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return err
	}
	switch {
	case st.Uid != 0:
		return fmt.Errorf("is owned by uid %d", st.Uid)
	case st.Mode&0o022 == 0:
		return nil
	case st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&unix.S_ISVTX != 0:
		return nil
	}
	return errors.New("is writable by group or others (mode " + strconv.FormatUint(uint64(st.Mode&0o7777), 8) + ")")
}
