// Package account gives one child process (an sshd) a login account that
// exists only in its private mount namespace: no host account is created
// and the host's account database and /run are never changed.
package account

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// SSHD writes passwd and group files into dir/etc that add user to the
// host's, and a shadow file that holds user alone, with its home in
// dir/home, and returns the mounts that show them to the child only, plus
// a fresh /run holding sshd's privilege-separation directory. The child must run in its own mount namespace (every child of
// the namespace launcher does).
func SSHD(dir, user string) ([]ns.Mount, error) {
	uid, err := freeUID()
	if err != nil {
		return nil, fmt.Errorf("%s account: %w", user, err)
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, fmt.Errorf("%s account: %w", user, err)
	}
	if err := os.Chown(home, uid, uid); err != nil {
		return nil, fmt.Errorf("%s account: %w", user, err)
	}
	if err := passable(dir); err != nil {
		return nil, fmt.Errorf("%s account: %w", user, err)
	}
	etc := filepath.Join(dir, "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return nil, fmt.Errorf("%s account: %w", user, err)
	}
	// passwd and group: the host's accounts (sshd's privilege-separation
	// user among them) and the new one.
	for name, line := range map[string]string{
		"passwd": fmt.Sprintf("%s:x:%d:%d:twnsbench:%s:/bin/sh\n", user, uid, uid, home),
		"group":  fmt.Sprintf("%s:x:%d:\n", user, uid),
	} {
		host, err := os.ReadFile(filepath.Join("/etc", name))
		if err != nil {
			return nil, fmt.Errorf("%s account: %w", user, err)
		}
		if len(host) > 0 && host[len(host)-1] != '\n' {
			host = append(host, '\n')
		}
		if err := os.WriteFile(filepath.Join(etc, name), append(host, line...), 0o644); err != nil {
			return nil, fmt.Errorf("%s account: %w", user, err)
		}
	}
	// shadow: the new account only. sshd consults no other, and the host's
	// password hashes have no business in a run's directory (on another
	// host's disk, when the server role runs there). "*": no password, and
	// not locked ("!"), which sshd would refuse without PAM.
	if err := os.WriteFile(filepath.Join(etc, "shadow"), []byte(user+":*:19000:0:99999:7:::\n"), 0o600); err != nil {
		return nil, fmt.Errorf("%s account: %w", user, err)
	}
	// An overlay, not file bind mounts: the host may replace /etc/passwd
	// during a run (an apt install adding a system user), which would undo
	// a file's bind mount.
	mounts := []ns.Mount{{Kind: "overlay", Source: etc, Target: "/etc"}}
	mounts = append(mounts,
		ns.Mount{Kind: "tmpfs", Target: "/run"},
		ns.Mount{Kind: "mkdir", Target: "/run/sshd"})
	return mounts, nil
}

// passable lets every user pass through dir (a directory of keys, 0700,
// that also holds the account's home and sshd's authorized_keys, which
// sshd reads as the account), without listing it.
func passable(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	return os.Chmod(dir, st.Mode().Perm()|0o011)
}

// freeUID picks a uid no host account uses.
func freeUID() (int, error) {
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return 0, err
	}
	used := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Split(line, ":"); len(f) > 3 {
			used[f[2]] = true
			used[f[3]] = true
		}
	}
	for uid := 64990; uid > 60000; uid-- {
		if !used[strconv.Itoa(uid)] {
			return uid, nil
		}
	}
	return 0, errors.New("no free uid between 60001 and 64990")
}

// SSHDLogins is the sshd_config block every private sshd shares: key
// logins for user only, no PAM (so no host account is consulted or
// changed), and none of the per-login work (DNS, motd, lastlog) that would
// add to what the benchmark measures.
func SSHDLogins(user string) []string {
	return []string{
		"AllowUsers " + user,
		"UsePAM no",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PermitRootLogin no",
		"StrictModes no",
		"UseDNS no",
		"PrintMotd no",
		"PrintLastLog no",
	}
}

// UID is the uid SSHD gave user in dir (read back from its passwd file), for
// resources the account must own, such as a tun device it attaches to.
func UID(dir, user string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "etc", "passwd"))
	if err != nil {
		return 0, fmt.Errorf("%s account: %w", user, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Split(line, ":"); len(f) > 2 && f[0] == user {
			if uid, err := strconv.Atoi(f[2]); err == nil {
				return uid, nil
			}
		}
	}
	return 0, fmt.Errorf("%s account: not in %s", user, filepath.Join(dir, "etc", "passwd"))
}
