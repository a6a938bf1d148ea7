package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
)

// TestSSHTunVariants: seed 002's SSH tunnel in both variants, each its own
// row labelled with the cipher suite ssh reports it negotiated; the
// traffic crosses the tunnel (the ssh client and the tunnel's sshd
// session, in the transport's cgroups, spend CPU on it), ping works (a
// layer-3 path), a new connection costs no delayed-ACK wait (ssh -w
// with a terminal session, so sshd sets TCP_NODELAY: TCP_CRR ~11
// connections/s with -N, hundreds without the wait), and nothing is left
// behind.
func TestSSHTunVariants(t *testing.T) {
	nstest.RequireRoot(t)
	doc, out := runAndRead(t, "--transports", "ssh-tun,ssh-tun:aes128-ctr", "--wan", "off", "--quick", "--duration", "1s", "--warmup", "0",
		"--instruments", "iperf3-1,ping,tcp_crr")
	labels := map[string]string{}
	for _, tr := range doc.Transports {
		labels[tr.Name] = tr.Label
	}
	if !strings.HasPrefix(labels["ssh-tun"], "SSH over an SSH -w tunnel (") || strings.Contains(labels["ssh-tun"], "(default)") ||
		labels["ssh-tun:aes128-ctr"] != "SSH over an SSH -w tunnel (aes128-ctr/hmac-sha1)" {
		t.Errorf("labels %v: want the negotiated suites", labels)
	}
	got := 0
	for _, s := range doc.Samples {
		switch s.Instrument {
		case "iperf3-1":
			got++
			if s.Value <= 0.01 || s.TransportCPUSec["client"] < 0.1 || s.TransportCPUSec["server"] < 0.1 {
				t.Errorf("%s iperf3-1 %.3f Gbit/s, transport CPU %v: want traffic through the tunnel's ssh and sshd", s.Transport, s.Value, s.TransportCPUSec)
			}
			if s.MovedBytes == nil || s.TunnelBytes == nil || *s.TunnelBytes < *s.MovedBytes {
				t.Errorf("%s iperf3-1 moved %v bytes, tun0 carried %v: want at least as many", s.Transport, s.MovedBytes, s.TunnelBytes)
			}
		case "tcp_crr":
			got++
			if s.Value < 100 {
				t.Errorf("%s tcp_crr %.1f conn/s: want over 100 (about 11 when sshd holds small packets for the delayed ACK, Nagle on)", s.Transport, s.Value)
			}
		case "ping":
			got++
			if s.Value <= 0 {
				t.Errorf("%s ping %v", s.Transport, s.Value)
			}
		}
	}
	if got != 6 {
		t.Errorf("%d iperf3-1, ping and tcp_crr samples, want 3 per variant", got)
	}
	md, _ := os.ReadFile(filepath.Join(out, "bench-report.md"))
	if !strings.Contains(string(md), "| SSH over an SSH -w tunnel (aes128-ctr/hmac-sha1) | ") {
		t.Errorf("report lacks the aes128-ctr row")
	}
	if left := leftoversOf(runPrefix(t, out)); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if code, _, stderr := runInProcess("run", "--transports", "ssh-tun:3des", "--out", t.TempDir()); code != exitRefused ||
		!strings.Contains(stderr, "known: default, aes128-ctr") {
		t.Errorf("unknown variant: exit %d %q", code, stderr)
	}
}
