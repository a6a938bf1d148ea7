package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
)

// TestSshuttle: seed 002's sshuttle row (nft method). The TCP instruments
// run through it (the client's sshuttle and ssh, the server's sshd and
// python, in the transport's cgroups, spend CPU on them) and its SSH
// connection carried at least what iperf3 moved; ping is not applicable
// (TCP only), and nothing is left behind.
func TestSshuttle(t *testing.T) {
	nstest.RequireRoot(t)
	for _, p := range []string{"sshuttle", "nft"} {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := exec.LookPath("/usr/sbin/" + p); err != nil {
				t.Skipf("SKIPPED: %s not installed (scripts/install-deps.sh installs sshuttle and nftables)", p)
			}
		}
	}
	doc, out := runAndRead(t, "--transports", "sshuttle", "--wan", "off", "--quick", "--duration", "1s", "--warmup", "0", "--instruments", "iperf3-1,tcp_rr,ping")
	if len(doc.Transports) != 1 || !strings.HasPrefix(doc.Transports[0].Label, "SSH over sshuttle (nft") ||
		doc.Transports[0].Facts["sshuttle"] == "" {
		t.Errorf("transports %+v: want the sshuttle row with its version", doc.Transports)
	}
	got := map[string]int{}
	for _, s := range doc.Samples {
		got[s.Instrument]++
		switch s.Instrument {
		case "iperf3-1":
			if s.Value <= 0.01 || s.TransportCPUSec["client"] < 0.1 || s.TransportCPUSec["server"] < 0.1 {
				t.Errorf("iperf3-1 %.3f Gbit/s, transport CPU %v: want the traffic through sshuttle at both ends", s.Value, s.TransportCPUSec)
			}
			if s.MovedBytes == nil || s.TunnelBytes == nil || *s.TunnelBytes < *s.MovedBytes {
				t.Errorf("iperf3-1 moved %v bytes, sshuttle's connection carried %v: want at least as many", s.MovedBytes, s.TunnelBytes)
			}
		case "tcp_rr":
			if s.Value <= 0 {
				t.Errorf("tcp_rr %v", s.Value)
			}
		}
	}
	if got["iperf3-1"] != 1 || got["tcp_rr"] != 1 || got["ping"] != 0 || len(doc.Failures) > 0 {
		t.Errorf("samples per instrument %v, failures %+v: want iperf3-1 and tcp_rr once, no ping, none failed", got, doc.Failures)
	}
	pingNA := false
	for _, sk := range doc.Skipped {
		if sk.Instrument == "ping" && strings.Contains(sk.Reason, "not applicable: the path carries TCP, not ICMP") {
			pingNA = true
		} else {
			t.Errorf("skipped: %+v; want only ping, not applicable", sk)
		}
	}
	if !pingNA {
		t.Errorf("skipped %+v: want ping not applicable (TCP only)", doc.Skipped)
	}
	if left := leftoversOf(runPrefix(t, out)); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
