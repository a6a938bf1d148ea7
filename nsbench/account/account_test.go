package account

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSSHDAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to hand the home directory to the account (run: sudo go test ./nsbench/account)")
	}
	// 0700, as a directory of keys is.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mounts, err := SSHD(dir, "twtest")
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.ReadFile("/etc/passwd")
	passwd, _ := os.ReadFile(filepath.Join(dir, "etc", "passwd"))
	if !strings.HasPrefix(string(passwd), string(host)) {
		t.Error("passwd does not start with the host's accounts")
	}
	last := strings.Split(strings.TrimSpace(string(passwd)), "\n")
	if f := strings.Split(last[len(last)-1], ":"); f[0] != "twtest" || f[5] != filepath.Join(dir, "home") {
		t.Errorf("account line %q", last[len(last)-1])
	}
	// The account alone (no password, not locked): none of the host's
	// password hashes is copied.
	shadow, _ := os.ReadFile(filepath.Join(dir, "etc", "shadow"))
	if got, want := string(shadow), "twtest:*:19000:0:99999:7:::\n"; got != want {
		t.Errorf("shadow holds %d lines, %q…; want only %q", strings.Count(got, "\n"), strings.SplitN(got, ":", 2)[0], want)
	}
	if st, err := os.Stat(filepath.Join(dir, "etc", "shadow")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("shadow: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	// The account must pass through it to its home, and sshd as the
	// account to authorized_keys.
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o711 {
		t.Errorf("%s: %v, mode %v; want 0711", dir, err, st.Mode().Perm())
	}
	targets := map[string]string{}
	for _, m := range mounts {
		targets[m.Target] = m.Kind
	}
	for target, kind := range map[string]string{"/etc": "overlay", "/run": "tmpfs", "/run/sshd": "mkdir"} {
		if targets[target] != kind {
			t.Errorf("mount %s: %q, want %s (all: %v)", target, targets[target], kind, mounts)
		}
	}
	if b, _ := os.ReadFile("/etc/passwd"); string(b) != string(host) {
		t.Error("the host's /etc/passwd changed")
	}
}
