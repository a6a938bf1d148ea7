package transport

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/role"
)

// TestLibreswanVariants: every variant has the transform the ESP probe
// tries, and the kernel SA it must read back is the seed's set.
func TestLibreswanVariants(t *testing.T) {
	want := map[string]string{
		"aes_gcm256":  "rfc4106(gcm(aes)) 256-bit",
		"aes128-sha1": "cbc(aes) 128-bit + hmac(sha1)-96",
	}
	if len(libreswanSpec.Variants) != len(want) || libreswanSpec.Variants[0] != "aes_gcm256" {
		t.Fatalf("variants %v: want aes_gcm256 (default) and aes128-sha1", libreswanSpec.Variants)
	}
	for _, v := range libreswanSpec.Variants {
		a, ok := espAlgos[lsESPAlgo[v]]
		if !ok {
			t.Errorf("%s: no ESP transform to probe (%q)", v, lsESPAlgo[v])
			continue
		}
		k, err := a.newKeys()
		if err != nil {
			t.Fatal(err)
		}
		if got := describe(*a.state(lsClient, lsServer, 1, netlink.XFRM_MODE_TUNNEL, k)); got != want[v] {
			t.Errorf("%s: the kernel must hold %q, want %q", v, got, want[v])
		}
	}
}

// TestLibreswanConfig: one side's files name only its own directory,
// carry the variant's ESP proposal and the PSK, are private, and a new
// condition starts from an empty directory (a stale control socket would
// pass for pluto's being ready). The files are written as the role's op
// writes them, here on this host.
func TestLibreswanConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "libreswan", "client")
	c := lsConfig{dir: dir, local: netip.MustParseAddr("10.77.0.2"), remote: netip.MustParseAddr("10.77.0.4"),
		localTS: lsClient, remoteTS: lsServer, localID: "client", remoteID: "server", esp: "aes128-sha1", psk: []byte{0xab, 0x01}}
	if err := c.files().write(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.ctl(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.files().write(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.ctl()); !os.IsNotExist(err) {
		t.Errorf("the previous control socket survived: %v", err)
	}
	conf, err := os.ReadFile(c.conf())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"\tleft=10.77.0.2\n", "\tleftid=@client\n", "\tleftsubnet=10.91.0.2/32\n",
		"\tright=10.77.0.4\n", "\trightid=@server\n", "\trightsubnet=10.91.0.1/32\n", "\ttype=tunnel\n",
		"\tauthby=secret\n", "\tesp=aes128-sha1\n", "\tike=aes_gcm256-sha2_256-dh31\n", "\tleftupdown=%disabled\n",
		"\tencapsulation=no\n", "\tauto=ignore\n", "\tdnssec-enable=no\n", "conn twnsb\n"} {
		if !strings.Contains(string(conf), line) {
			t.Errorf("ipsec.conf lacks %q:\n%s", line, conf)
		}
	}
	secrets, err := os.ReadFile(c.secrets())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(secrets), "@client @server : PSK \"ab01\"\n"; got != want {
		t.Errorf("ipsec.secrets %q, want %q", got, want)
	}
	for _, f := range []string{c.conf(), c.secrets(), c.nss(), c.run()} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want private", f, fi.Mode())
		}
	}
}

// TestLibreswanEstablished: whack --initiate's output (Libreswan 4.10 in
// the VM) gives the negotiated transform; a failed one (made up here)
// gives none.
func TestLibreswanEstablished(t *testing.T) {
	ok := `181 "twnsb" #1: initiating IKEv2 connection
182 "twnsb" #1: sent IKE_AUTH request {cipher=AES_GCM_16_256 integ=n/a prf=HMAC_SHA2_256 group=DH31}
003 "twnsb" #1: initiator established IKE SA; authenticated peer using authby=secret and ID_FQDN '@server'
004 "twnsb" #2: initiator established Child SA using #1; IPsec tunnel [10.94.0.2-10.94.0.2:0-65535 0] -> [10.94.0.1-10.94.0.1:0-65535 0] {ESP/ESN=>0xb20b9b11 <0xc8ba0109 xfrm=AES_GCM_16_256-NONE DPD=passive}
`
	if m := established.FindStringSubmatch(ok); m == nil || m[1] != "AES_GCM_16_256-NONE" {
		t.Errorf("established: %q, want AES_GCM_16_256-NONE", m)
	}
	failed := `181 "twnsb" #1: initiating IKEv2 connection
036 "twnsb" #1: encountered fatal error in state STATE_V2_PARENT_I2
`
	if m := established.FindStringSubmatch(failed); m != nil {
		t.Errorf("established in a failed exchange: %q", m)
	}
}

// TestLibreswanPrograms: the private unpack is found where
// TWNSBENCH_LIBRESWAN_DIR says, and its origin names Debian's version;
// an incomplete one is named as missing (unless this host has a system
// install, which is then used).
func TestLibreswanPrograms(t *testing.T) {
	if _, err := systemProgram("certutil"); err != nil {
		t.Skip("SKIPPED: no certutil (libnss3-tools; scripts/install-deps.sh installs it)")
	}
	root := t.TempDir()
	t.Setenv(LibreswanDirEnv, root)
	exec := filepath.Join(root, "usr/libexec/ipsec")
	if err := os.MkdirAll(exec, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"pluto", "whack"} {
		if err := os.WriteFile(filepath.Join(exec, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, system := os.Stat("/usr/libexec/ipsec/addconn")
	p, err := libreswanPrograms()
	switch {
	case system == nil && (err != nil || p.Root != "/"):
		t.Errorf("incomplete unpack, system install: %+v, %v; want the system's", p, err)
	case system != nil && (err == nil || !strings.Contains(err.Error(), "no "+filepath.Join(exec, "addconn"))):
		t.Errorf("incomplete unpack: %+v, %v; want addconn named missing", p, err)
	}
	if err := os.WriteFile(filepath.Join(exec, "addconn"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".twnsbench-version"), []byte("4.10-2+deb12u1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err = libreswanPrograms()
	if err != nil || p.Pluto != filepath.Join(exec, "pluto") || p.Addconn != filepath.Join(exec, "addconn") {
		t.Fatalf("%+v, %v: want the unpack's programs", p, err)
	}
	if got, want := p.origin(), " (Debian 4.10-2+deb12u1, unpacked in "+root+")"; got != want {
		t.Errorf("origin %q, want %q", got, want)
	}
	// On a role's host the op finds the same, and all of it crosses the
	// wire: the origin is told from the answer, not from this host's files.
	raw, err := role.Serve(context.Background(), lsProgramsOp.Name(), json.RawMessage("{}"))
	var q lsPrograms
	if err == nil {
		err = json.Unmarshal(raw, &q)
	}
	if err := os.Remove(filepath.Join(root, ".twnsbench-version")); err != nil {
		t.Fatal(err)
	}
	if err != nil || q != p || q.origin() != p.origin() {
		t.Errorf("op %s: %+v, %v; want %+v", lsProgramsOp.Name(), q, err, p)
	}
	m := p.mounts()
	if len(m) != 2 || m[1].Kind != "overlay" || m[1].Source != filepath.Join(root, "usr/libexec") || m[1].Target != "/usr/libexec" {
		t.Errorf("mounts %+v: want the unpack's usr/libexec over /usr/libexec", m)
	}
}

// TestLibreswanDirMustBeRoots: root runs pluto from
// $TWNSBENCH_LIBRESWAN_DIR, so an unpack another user owns (uid 65534,
// who could swap pluto) is refused, naming the variable and the owner;
// the same unpack as root's is used.
func TestLibreswanDirMustBeRoots(t *testing.T) {
	nstest.RequireRoot(t)
	root := filepath.Join(t.TempDir(), "libreswan")
	exec := filepath.Join(root, "usr/libexec/ipsec")
	if err := os.MkdirAll(exec, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"pluto", "whack", "addconn"} {
		if err := os.WriteFile(filepath.Join(exec, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(LibreswanDirEnv, root)
	if err := os.Chown(root, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := libreswanPrograms()
	want := "$" + LibreswanDirEnv + "=" + root + " refused: " + root + " is owned by uid 65534"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("another user's unpack: %v, want %q", err, want)
	}
	if err := os.Chown(root, 0, 0); err != nil {
		t.Fatal(err)
	}
	if d, err := LibreswanDir(); err != nil || d != root {
		t.Errorf("root's unpack: %q, %v; want %s", d, err, root)
	}
}
