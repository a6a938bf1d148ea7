package remote

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/twnsbench/twnsbench/nsbench/hosts"
)

const ipAddrJSON = `[{"ifindex":1,"ifname":"lo","addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8}]},
{"ifindex":2,"ifname":"eth0","addr_info":[{"family":"inet","local":"10.0.0.2","prefixlen":24},{"family":"inet6","local":"fd00::2","prefixlen":64}]},
{"ifindex":3,"ifname":"eth1","addr_info":[{"family":"inet6","local":"fe80::1","prefixlen":64}]}]`

func TestPickIface(t *testing.T) {
	for _, tc := range []struct{ conn, want, name, err string }{
		{"10.0.0.1 40000 10.0.0.2 22", "", "eth0", ""},
		{"fd00::1 40000 fd00::2 22", "", "eth0", ""},
		{"10.0.0.1 40000 10.0.0.2 22", "eth0", "eth0", ""},
		{"10.0.0.1 40000 10.0.0.2 22", "eth9", "", `no interface "eth9" (it has: eth0, eth1, lo)`},
		{"10.0.0.1 40000 10.0.0.2 22", "eth1", "", "interface eth1 has no IPv4 address"},
		{"10.9.9.9 40000 10.9.9.8 22", "", "", "no interface holds the address this host was reached at"},
		{"127.0.0.1 40000 127.0.0.1 22", "", "", "lo is the loopback"},
	} {
		got, err := pickIface(tc.conn, []byte(ipAddrJSON), tc.want)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q want %q: %v, want error %q", tc.conn, tc.want, err, tc.err)
			}
			continue
		}
		if err != nil || got.Name != tc.name || len(got.IPv4) != 1 || got.IPv4[0].String() != "10.0.0.2/24" {
			t.Errorf("%q want %q: %+v, %v", tc.conn, tc.want, got, err)
		}
	}
}

func newKey(t *testing.T) ssh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestHostKeys(t *testing.T) {
	known, other := newKey(t), newKey(t)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecKey, _ := ssh.NewPublicKey(&ec.PublicKey)
	file := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize("10.0.0.2:2222")}, known)
	if err := os.WriteFile(file, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hk, err := newHostKeys(file)
	if err != nil {
		t.Fatal(err)
	}
	addr := &net.TCPAddr{IP: net.ParseIP("10.0.0.2"), Port: 2222}
	if err := hk.callback("10.0.0.2:2222", addr, known); err != nil {
		t.Errorf("known key refused: %v", err)
	}

	err = hk.callback("10.0.0.2:2222", addr, other)
	var hke *HostKeyError
	if !errors.As(err, &hke) || !hke.Changed() {
		t.Fatalf("changed key: %v", err)
	}
	for _, want := range []string{"HOST KEY CHANGED", ssh.FingerprintSHA256(other), ssh.FingerprintSHA256(known), file + ":1", "ssh-keygen -R [10.0.0.2]:2222"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("changed key message lacks %q: %v", want, err)
		}
	}

	err = hk.callback("10.0.0.3:22", &net.TCPAddr{IP: net.ParseIP("10.0.0.3"), Port: 22}, ecKey)
	if !errors.As(err, &hke) || hke.Changed() {
		t.Fatalf("unknown key: %v", err)
	}
	for _, want := range []string{"unknown host key", ssh.FingerprintSHA256(ecKey), "ssh-keyscan -p 22 -t ecdsa 10.0.0.3 >> " + file} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("unknown key message lacks %q: %v", want, err)
		}
	}

	if got := hk.algorithms("10.0.0.2:2222"); len(got) != 1 || got[0] != ssh.KeyAlgoED25519 {
		t.Errorf("algorithms for a host known by ed25519: %v", got)
	}
	if got := hk.algorithms("10.0.0.3:22"); got != nil {
		t.Errorf("algorithms for an unknown host: %v, want any", got)
	}
	if _, err := newHostKeys(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "--known-hosts") {
		t.Errorf("missing known_hosts: %v", err)
	}
}

func TestLoadAuthWithoutKeys(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("HOME", t.TempDir())
	if _, err := loadAuth(""); err == nil || !strings.Contains(err.Error(), "no SSH key") {
		t.Errorf("no keys anywhere: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "id")
	os.WriteFile(bad, []byte("not a key"), 0o600)
	if _, err := loadAuth(bad); err == nil || !strings.Contains(err.Error(), "--identity: "+bad) {
		t.Errorf("unparsable identity: %v", err)
	}
}

// A command's failure quotes the host's last stderr line: its text, with
// control characters quoted.
func TestLastLineQuotesTheHostsText(t *testing.T) {
	if got := lastLine("first\nsecond \x1b]0;pwned\x07\n"); got != `second \x1b]0;pwned\a` {
		t.Errorf("lastLine = %q", got)
	}
	if got := lastLine("::error title=x::y"); got != `"::error title=x::y"` {
		t.Errorf("lastLine = %q", got)
	}
}

// TestCopyAddRefusesNames: a program copied beside twnsbench gets a plain
// name of ours, never a path, a word for the shell or the copy's own
// name; each is refused before the host is asked anything (the copy here
// has no connection to use).
func TestCopyAddRefusesNames(t *testing.T) {
	cp := &Copy{Dir: "/var/tmp/twnsb-000000-client", conn: &Conn{Host: hosts.Host{Role: "client", User: "root", Addr: "10.0.0.2", Port: 22}}}
	for _, name := range []string{"", "twnsbench", "../twnsbench", "a/b", "-rf", ".hidden", "a b", "a;rm", "a'b", "$(id)", "Build-A", strings.Repeat("a", 81)} {
		_, err := cp.Add(t.Context(), "/bin/true", name)
		if err == nil || !strings.Contains(err.Error(), "is not a name for a program beside the copy") || !strings.Contains(err.Error(), "root@10.0.0.2:22") {
			t.Errorf("name %q: %v, want it refused naming the host", name, err)
		}
	}
}
