package proc

import (
	"errors"
	"os/exec"
	"testing"
)

// TestLookPathSystemDirs: a daemon missing from PATH (a root shell's or
// sudo's may lack /usr/sbin) is found in the system directories; a path is
// taken as given, and a missing program is exec's not-found error.
func TestLookPathSystemDirs(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if p, err := LookPath("sshd"); err != nil || p != "/usr/sbin/sshd" {
		t.Errorf("sshd off PATH: %q, %v; want /usr/sbin/sshd (openssh-server installs it there)", p, err)
	}
	if p, err := LookPath("./sshd"); err == nil {
		t.Errorf("./sshd resolved to %q: a path must not be searched for", p)
	}
	if _, err := LookPath("twnsbench-no-such-program"); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("a missing program: %v, want exec.ErrNotFound", err)
	}
}
