package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
)

// otherUser is the uid and gid of "another local user": nobody, who owns
// nothing twnsbench makes.
const otherUser = "65534"

// asOtherUser runs the shell script as otherUser, with args as $1….
func asOtherUser(t *testing.T, script string, args ...string) {
	t.Helper()
	argv := append([]string{"--reuid=" + otherUser, "--regid=" + otherUser, "--clear-groups", "--", "sh", "-c", script, "sh"}, args...)
	if out, err := exec.Command("setpriv", argv...).CombinedOutput(); err != nil {
		t.Fatalf("as uid %s: %s: %v\n%s", otherUser, script, err, out)
	}
}

// TestCleanHostTakesOnlyItsOwnCopies: under /var/tmp, which every local
// user can write, another user makes directories named like copies of
// twnsbench and backdates them past remote.StaleAge: one whose name holds
// a space and a glob matching a directory in root's login directory, one
// holding a file named twnsbench. clean --host leaves both, and the login
// directory, alone, and still removes a stale copy of root's. (Before,
// a shell loop over an unquoted $(find …) split the first name, and root
// removed what its glob matched in the login directory: here only the
// test's own canary, never anything else of /root.)
func TestCleanHostTakesOnlyItsOwnCopies(t *testing.T) {
	requireRoot(t)
	l := remotetest.New(t, 1)
	m := l.Machines[0]
	keys := []string{"--identity", l.Identity, "--known-hosts", l.KnownHosts, "--connect-timeout", "3s"}

	home := l.Exec(t, m, "pwd") // where a root login's shell starts on the machine
	canary := filepath.Join(home, l.Prefix+"-canary")
	if err := os.Mkdir(canary, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(canary) })

	globbing := filepath.Join(remote.CopyRoot, l.Prefix+"-x "+l.Prefix+"-canary*")
	foreign := filepath.Join(remote.CopyRoot, l.Prefix+"-y")
	t.Cleanup(func() { os.RemoveAll(globbing); os.RemoveAll(foreign) })
	asOtherUser(t, `mkdir -- "$1" "$2" && : > "$2/twnsbench" && touch -d '1 hour ago' -- "$1" "$2"`, globbing, foreign)

	stale := filepath.Join(remote.CopyRoot, l.Prefix+"-client")
	if err := os.Mkdir(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stale) })
	if err := os.WriteFile(filepath.Join(stale, "twnsbench"), []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := inOrch(t, l, append([]string{"clean", "--host", "relay=root@" + m.Addr.String()}, keys...)...)
	t.Logf("clean --host: exit %d\n%s%s", code, stdout, stderr)
	if code != exitOK || !strings.Contains(stdout, "removed "+stale+" (a copy of twnsbench)") {
		t.Errorf("clean --host: exit %d, want 0 and %s removed", code, stale)
	}
	for _, p := range []string{canary, globbing, foreign, filepath.Join(foreign, "twnsbench")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("clean --host removed %q, which is not a copy of root's: %v", p, err)
		}
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale copy %s is still there: %v", stale, err)
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
