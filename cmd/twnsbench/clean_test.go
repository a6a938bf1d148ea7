package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
)

// plantForeignCopies prepares, before clean --host runs on machine m of
// lab l, what another local user can make under /var/tmp, which every
// user can write: directories named like copies of twnsbench, backdated
// past remote.StaleAge, one whose name holds a space and a glob matching a
// canary in root's login directory on m, one holding a file twnsbench.
// The check it returns, after clean --host, fails unless all three are
// intact. (Before, a shell loop over an unquoted $(find …) split the
// first name, and root removed what its glob matched in the login
// directory: here only the test's own canary, never anything else of it.)
// It is part of TestDoctorHosts, whose clean --host is the one the tests
// run. (A lab machine shares this kernel's cgroups but not this host's
// /tmp: its clean knows the other runs live by their cgroups' owner marks.)
func plantForeignCopies(t *testing.T, l *remotetest.Lab, m *remotetest.Machine) (check func()) {
	t.Helper()
	home := l.Exec(t, m, "pwd") // where a root login's shell starts on the machine
	canary := filepath.Join(home, l.Prefix+"-canary")
	if err := os.Mkdir(canary, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(canary) })
	globbing := filepath.Join(remote.CopyRoot, l.Prefix+"-x "+l.Prefix+"-canary*")
	foreign := filepath.Join(remote.CopyRoot, l.Prefix+"-y")
	t.Cleanup(func() { os.RemoveAll(globbing); os.RemoveAll(foreign) })
	remotetest.AsOtherUser(t, `mkdir -- "$1" "$2" && : > "$2/twnsbench" && touch -d '1 hour ago' -- "$1" "$2"`, globbing, foreign)
	return func() {
		for _, p := range []string{canary, globbing, foreign, filepath.Join(foreign, "twnsbench")} {
			if _, err := os.Lstat(p); err != nil {
				t.Errorf("clean --host removed %q, which is not a copy of root's: %v", p, err)
			}
		}
	}
}

// checkPrivateModes checks the modes of the private directories of run
// prefix (an ssh run's, while it runs or once killed): other users may
// pass through (the bench account must, to its home and authorized_keys
// under the server's ssh/, and to the payload) but not list them; the
// client's key directory is root's alone.
func checkPrivateModes(t *testing.T, prefix string) {
	t.Helper()
	dir := filepath.Join("/tmp", prefix)
	for sub, want := range map[string]os.FileMode{
		"":           0o711,
		"client":     0o711,
		"server":     0o711,
		"client/ssh": 0o700,
		"server/ssh": 0o711,
	} {
		st, err := os.Lstat(filepath.Join(dir, sub))
		if err != nil || !st.IsDir() || st.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v; want a directory, %#o", filepath.Join(dir, sub), err, st.Mode(), want)
		}
	}
}
