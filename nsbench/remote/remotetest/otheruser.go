package remotetest

import (
	"os/exec"
	"testing"
)

// OtherUser is the uid and gid of "another local user" of a machine (and
// of this host, whose filesystem the machines share): nobody, who owns
// nothing twnsbench makes.
const OtherUser = "65534"

// AsOtherUser runs the shell script as OtherUser, with args as $1…, as an
// attacker without privileges would.
func AsOtherUser(t testing.TB, script string, args ...string) {
	t.Helper()
	argv := append([]string{"--reuid=" + OtherUser, "--regid=" + OtherUser, "--clear-groups", "--", "sh", "-c", script, "sh"}, args...)
	if out, err := exec.Command("setpriv", argv...).CombinedOutput(); err != nil {
		t.Fatalf("as uid %s: %s: %v\n%s", OtherUser, script, err, out)
	}
}
