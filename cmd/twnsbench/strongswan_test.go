package main

import (
	"os"
	"os/exec"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
)

// TestStrongSwan: seed 002's strongSwan rows (IKEv2, ESP in userspace
// through kernel-libipsec), each labelled with the ESP proposal swanctl
// reports negotiated; the traffic crosses both charons (their CPU, in the
// transport's cgroups) and ipsec0 (its byte count), ping works (a layer-3 path), and nothing is left
// behind.
func TestStrongSwan(t *testing.T) {
	nstest.RequireRoot(t)
	if !haveCharonSystemd() {
		t.Skip("SKIPPED: charon-systemd not installed (scripts/install-deps.sh installs it)")
	}
	doc, out := runAndRead(t, "--transports", "strongswan,strongswan:aes128-sha256", "--wan", "off", "--quick", "--duration", "1s", "--warmup", "0", "--instruments", "iperf3-1,ping")
	want := map[string]string{
		"strongswan":               "SSH over strongSwan (userspace ESP, libipsec, AES_GCM_16-256)",
		"strongswan:aes128-sha256": "SSH over strongSwan (userspace ESP, libipsec, AES_CBC-128/HMAC_SHA2_256_128)",
	}
	if len(doc.Transports) != len(want) {
		t.Errorf("transports %+v: want %d rows", doc.Transports, len(want))
	}
	for _, tr := range doc.Transports {
		t.Logf("%s: %q", tr.Name, tr.Label)
		if tr.Label != want[tr.Name] {
			t.Errorf("%s: label %q, want %q (the negotiated ESP proposal)", tr.Name, tr.Label, want[tr.Name])
		}
	}
	n := map[string]int{}
	for _, s := range doc.Samples {
		switch s.Instrument {
		case "iperf3-1":
			n[s.Transport]++
			t.Logf("%s: iperf3-1 %.3f Gbit/s, transport CPU %v", s.Transport, s.Value, s.TransportCPUSec)
			if s.Value <= 0.01 || s.TransportCPUSec["client"] < 0.1 || s.TransportCPUSec["server"] < 0.1 {
				t.Errorf("%s iperf3-1 %.3f Gbit/s, transport CPU %v: want the traffic through both charons", s.Transport, s.Value, s.TransportCPUSec)
			}
			if s.MovedBytes == nil || s.TunnelBytes == nil || *s.TunnelBytes < *s.MovedBytes || *s.MovedBytes < 1e6 {
				t.Errorf("%s iperf3-1 moved %v bytes, ipsec0 carried %v: want at least what iperf3 moved", s.Transport, s.MovedBytes, s.TunnelBytes)
			}
		case "ping":
			n[s.Transport]++
			if s.Value <= 0 {
				t.Errorf("%s ping %v", s.Transport, s.Value)
			}
		}
	}
	for name := range want {
		if n[name] != 2 {
			t.Errorf("%s: %d samples, want 2", name, n[name])
		}
	}
	if len(doc.Failures) > 0 {
		t.Errorf("failures %+v", doc.Failures)
	}
	if left := leftoversOf(runPrefix(t, out)); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// haveCharonSystemd: Debian puts charon-systemd in /usr/sbin, off a
// user's PATH.
func haveCharonSystemd() bool {
	if _, err := exec.LookPath("charon-systemd"); err == nil {
		return true
	}
	for _, p := range []string{"/usr/sbin/charon-systemd", "/usr/lib/ipsec/charon-systemd", "/usr/libexec/ipsec/charon-systemd"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}
