package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestOpenVPN: seed 002's OpenVPN rows, static key and TLS with two of its
// data channel ciphers in one run, each labelled with the suite openvpn
// reports for its data channel; the traffic crosses both openvpn
// processes (their CPU, in the transport's cgroups) and the tun device
// (its byte counter grows by at least what iperf3 moved), ping works (a
// layer-3 path), and nothing is left behind.
func TestOpenVPN(t *testing.T) {
	nstest.RequireRoot(t)
	if _, err := exec.LookPath("openvpn"); err != nil {
		if _, err := exec.LookPath("/usr/sbin/openvpn"); err != nil {
			t.Skip("SKIPPED: openvpn not installed (scripts/install-deps.sh installs it)")
		}
	}
	doc, out := runAndRead(t, "--transports", "openvpn-static,openvpn-tls,openvpn-tls:chacha20-poly1305",
		"--wan", "off", "--quick", "--duration", "1s", "--warmup", "0", "--instruments", "iperf3-1,ping")
	labels := map[string]string{}
	for _, tr := range doc.Transports {
		labels[tr.Name] = tr.Label
	}
	for name, want := range map[string]string{
		"openvpn-static":                "SSH over OpenVPN (static key, AES-256-CBC/SHA1)",
		"openvpn-tls":                   "SSH over OpenVPN (TLS, AES-256-GCM)",
		"openvpn-tls:chacha20-poly1305": "SSH over OpenVPN (TLS, CHACHA20-POLY1305)",
	} {
		if labels[name] != want {
			t.Errorf("%s label %q, want %q (the negotiated suite)", name, labels[name], want)
		}
	}
	n := 0
	for _, s := range doc.Samples {
		switch s.Instrument {
		case "iperf3-1":
			n++
			if s.Value <= 0.01 || s.TransportCPUSec["client"] < 0.1 || s.TransportCPUSec["server"] < 0.1 {
				t.Errorf("%s iperf3-1 %.3f Gbit/s, transport CPU %v: want the traffic through both openvpn processes", s.Transport, s.Value, s.TransportCPUSec)
			}
			if s.MovedBytes == nil || s.TunnelBytes == nil || *s.TunnelBytes < *s.MovedBytes || *s.MovedBytes < 1e6 {
				t.Errorf("%s iperf3-1 moved %v bytes, tun device carried %v: want at least what iperf3 moved", s.Transport, s.MovedBytes, s.TunnelBytes)
			}
		case "ping":
			n++
			if s.Value <= 0 {
				t.Errorf("%s ping %v", s.Transport, s.Value)
			}
		}
	}
	if n != 6 || len(doc.Failures) > 0 {
		t.Errorf("%d samples, want 6; failures %+v", n, doc.Failures)
	}
	// The transport states its program: the machine reports the openvpn
	// it ran beside the harness's own, and no program of a row not run.
	if hs := doc.Env.Hosts; len(hs) != 1 || !strings.HasPrefix(hs[0].Tools["openvpn"], "OpenVPN 2.") || hs[0].Tools["iperf3"] == "" || hs[0].Tools["wg"] != "" {
		t.Errorf("env.hosts tools %v, want openvpn's version beside iperf3's (and no wg)", hostsTools(hs))
	}
	if left := leftoversOf(runPrefix(t, out)); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func hostsTools(hs []results.Host) []map[string]string {
	var out []map[string]string
	for _, h := range hs {
		out = append(out, h.Tools)
	}
	return out
}
