package nsbench

import (
	"os"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
)

// A run with the client, tw's relay and the server on three machines
// reached over SSH: tw (and Pure SSH as the control) with iperf3-1,
// TCP_RR and scp, one sample each, tw's relay daemons' peak memory read
// on the relay's machine, and nothing left on any machine. Each machine
// has a /tmp of its own, so every file tw's client, server and relay read
// (the run's CA and the relay's leaf, tw's configurations, the exported
// user context, Caddy's, Xray's and sshd's files, the relay's login)
// reached it through its role. tw, Caddy and Xray are looked up here and
// started at the same paths on the machines, which share this filesystem
// but /tmp and /run.
func TestRunTWAcrossHosts(t *testing.T) {
	nstest.RequireRoot(t)
	tw, caddy, xray := os.Getenv("TWNSBENCH_TW"), os.Getenv("TWNSBENCH_CADDY"), os.Getenv("TWNSBENCH_XRAY")
	if tw == "" || caddy == "" || xray == "" {
		t.Skip("SKIPPED tw across hosts: set TWNSBENCH_TW, TWNSBENCH_CADDY and TWNSBENCH_XRAY to the binaries' paths " +
			"(tw: build it from Tunnel Whisperer's source; Caddy and Xray: scripts/install-relay-tools.sh DIR)")
	}
	if testing.Short() {
		t.Skip("integration test (skipped by -short)")
	}
	lab := remotetest.New(t, 3)
	o := Quick()
	o.Transports = []string{"tw", "ssh"}
	o.Runs, o.Duration, o.Warmup, o.WAN = 1, time.Second, 0, []string{"off"}
	o.Congestion = "host" // a machine's namespace cannot extend the host's allowed list
	o.OutDir = t.TempDir()
	o.Hosts = labHostsAt(t, lab, 50, "client", "relay", "server")
	instruments := []string{"iperf3-1", "tcp_rr", "scp"}
	res := runAcross(t, o, map[string]string{"tw": tw, "caddy": caddy, "xray": xray}, instruments)
	checkOneSampleEach(t, res, o.Transports, instruments)
	for _, s := range res.Doc.Samples {
		if s.Transport == "tw" && s.Instrument == "iperf3-1" {
			for _, r := range []string{"client", "relay", "server"} {
				if s.RoleCPUSec[r] <= 0 {
					t.Errorf("tw iperf3-1: %s CPU-s %.3f, want > 0 (every byte crosses the relay)", r, s.RoleCPUSec[r])
				}
			}
		}
	}
	var peaks map[string]int64
	for _, r := range res.Doc.RSS {
		if r.Transport == "tw" && r.Label == "" {
			peaks = r.PeakKB
		}
	}
	for _, key := range []string{"relay / caddy", "relay / xray", "relay / sshd", "client / tw client connect", "server / tw server start"} {
		if peaks[key] <= 0 {
			t.Errorf("tw: peak RSS of %q is %d, want it read on its machine (all: %v)", key, peaks[key], peaks)
		}
	}
	checkNothingLeft(t, lab, res.Prefix)
}
