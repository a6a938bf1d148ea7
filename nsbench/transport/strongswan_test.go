package transport

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStrongSwanConfig: one side's files are private, in its own
// directory, name its vici socket there, and a new condition removes the
// previous charon's socket (it would pass for the new one's being ready).
func TestStrongSwanConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "strongswan", "server")
	for _, kernel := range []bool{false, true} {
		c := ssConfig{dir: dir, local: netip.MustParseAddr("10.77.0.4"), remote: netip.MustParseAddr("10.77.0.2"),
			localTS: ssServer, remoteTS: ssClient, localID: "server", remoteID: "client", esp: "aes128gcm16", psk: []byte{0xab, 0x01}, kernel: kernel}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.vici(), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := c.files().write(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(c.vici()); !os.IsNotExist(err) {
			t.Errorf("kernel %v: the previous vici socket survived: %v", kernel, err)
		}
		encap := map[bool]string{false: "encap = yes", true: "encap = no"}[kernel]
		for f, want := range map[string][]string{
			"strongswan.conf": {"socket = unix://" + filepath.Join(dir, "charon.vici")},
			"swanctl.conf":    {encap, "local_ts = " + ssServer.String() + "/32", "esp_proposals = aes128gcm16", "secret = 0xab01"},
		} {
			p := filepath.Join(dir, f)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range want {
				if !strings.Contains(string(b), w) {
					t.Errorf("kernel %v: %s lacks %q", kernel, f, w)
				}
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("kernel %v: %s: mode %v, want 0600", kernel, f, fi.Mode())
			}
		}
	}
}
