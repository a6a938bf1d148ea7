package main

import (
	"os/exec"
	"testing"
)

// TestOpenVPNStatic: seed 002's OpenVPN static-key row, labelled with the
// cipher and HMAC openvpn reports for its data channel; the traffic
// crosses both openvpn processes (their CPU, in the transport's cgroups),
// ping works (a layer-3 path), and nothing is left behind.
func TestOpenVPNStatic(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("openvpn"); err != nil {
		t.Skip("SKIPPED: openvpn not installed (scripts/install-deps.sh installs it)")
	}
	doc, out := runAndRead(t, "--transports", "openvpn-static", "--wan", "off", "--quick", "--instruments", "iperf3-1,ping")
	if len(doc.Transports) != 1 || doc.Transports[0].Label != "SSH over OpenVPN (static key, AES-256-CBC/SHA1)" {
		t.Errorf("transports %+v: want the negotiated suite in the label", doc.Transports)
	}
	n := 0
	for _, s := range doc.Samples {
		switch s.Instrument {
		case "iperf3-1":
			n++
			if s.Value <= 0.01 || s.TransportCPUSec["client"] < 0.1 || s.TransportCPUSec["server"] < 0.1 {
				t.Errorf("iperf3-1 %.3f Gbit/s, transport CPU %v: want the traffic through both openvpn processes", s.Value, s.TransportCPUSec)
			}
		case "ping":
			n++
			if s.Value <= 0 {
				t.Errorf("ping %v", s.Value)
			}
		}
	}
	if n != 2 || len(doc.Failures) > 0 {
		t.Errorf("%d samples, failures %+v", n, doc.Failures)
	}
	if left := leftoversOf(runPrefix(t, out)); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
