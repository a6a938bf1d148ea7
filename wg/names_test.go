package wg

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
)

func TestIfName(t *testing.T) {
	for _, tt := range []struct{ prefix, role, want string }{
		{"twnsb-3fa9c1", "client", "twnsb-3fa9c1-c"},
		{"twnsb-3fa9c1", "server", "twnsb-3fa9c1-s"},
		{"twnsb-3fa9c1", "client2", "twnsb-3fa9c1-2"},
		{"twnsb-3fa9c1", "client64", "twnsb-3fa9c1-64"},
	} {
		if got, err := IfName(tt.prefix, tt.role); err != nil || got != tt.want {
			t.Errorf("IfName(%q, %q) = %q, %v; want %q", tt.prefix, tt.role, got, err, tt.want)
		}
	}
	a, _ := IfName("twnsb-000001", "client")
	b, _ := IfName("twnsb-000002", "client")
	if a == b {
		t.Errorf("two runs share interface name %q (their sockets would collide)", a)
	}
	if c, c2 := mustIfName(t, "client"), mustIfName(t, "client2"); c == c2 {
		t.Errorf("client and client2 share interface name %q", c)
	}
	for _, bad := range [][2]string{{"twnsb-3fa9c1-toolong", "client"}, {"twnsb-3fa9c1", "client100"}, {"", "client"}, {"twnsb-1", ""}, {"a/b", "client"}} {
		if name, err := IfName(bad[0], bad[1]); err == nil {
			t.Errorf("IfName(%q, %q) = %q, want an error", bad[0], bad[1], name)
		}
	}
}

func TestSocketPath(t *testing.T) {
	if got := SocketPath("twnsb-3fa9c1-c"); got != "/var/run/wireguard/twnsb-3fa9c1-c.sock" {
		t.Errorf("SocketPath = %q", got)
	}
}

// CleanSockets removes a socket nobody serves and keeps one that answers.
// It works on the real SocketDir, with names of a prefix unique to the test.
func TestCleanSockets(t *testing.T) {
	nstest.RequireRoot(t) // writes to SocketDir
	prefix := nstest.Prefix(t)
	if err := os.MkdirAll(SocketDir, 0o755); err != nil {
		t.Fatal(err)
	}
	live, err := net.Listen("unix", SocketPath(prefix+"-s"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	go func() {
		for {
			c, err := live.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dead, err := net.Listen("unix", SocketPath(prefix+"-c"))
	if err != nil {
		t.Fatal(err)
	}
	dead.(*net.UnixListener).SetUnlinkOnClose(false)
	dead.Close() // the file stays, nobody answers: a killed daemon's socket

	removed, err := CleanSockets(prefix)
	if len(removed) != 1 || removed[0] != SocketPath(prefix+"-c") {
		t.Errorf("removed %v, want only the dead socket", removed)
	}
	if err == nil || !strings.Contains(err.Error(), "still served") {
		t.Errorf("live socket: err %v, want 'still served'", err)
	}
	if _, err := os.Stat(SocketPath(prefix + "-s")); err != nil {
		t.Errorf("live socket removed: %v", err)
	}
	live.Close()
	if left := Sockets(prefix); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if removed, err := CleanSockets(prefix); err != nil || len(removed) != 0 {
		t.Errorf("second clean: %v, %v", removed, err)
	}
}

func mustIfName(t *testing.T, role string) string {
	t.Helper()
	n, err := IfName("twnsb-3fa9c1", role)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
