package nsbench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// labHostsWithRelay is an inventory putting the client, the relay and the
// server on machines 0, 1 and 2 of lab, each role at an address of its own
// on the lab's network.
func labHostsWithRelay(t testing.TB, lab *remotetest.Lab) Hosts {
	var hs []hosts.Host
	for i, r := range []string{"client", "relay", "server"} {
		h, err := hosts.ParseHost(fmt.Sprintf("%s=root@%s,addr=10.226.0.%d/24", r, lab.Machines[i].Addr, 50+i))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	return Hosts{
		Inventory: hosts.Inventory{Hosts: hs, Identity: lab.Identity, KnownHosts: lab.KnownHosts},
		SSH:       remote.Config{Identity: lab.Identity, KnownHosts: lab.KnownHosts, Dial: lab.Dial, KeepaliveInterval: time.Second},
	}
}

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
	o.Hosts = labHostsWithRelay(t, lab)
	instruments := []string{"iperf3-1", "tcp_rr", "scp"}
	plan, err := NewPlan(o, transport.Names())
	if err != nil {
		t.Fatal(err)
	}
	ts, err := transport.Build(o.Transports, map[string]string{"tw": tw, "caddy": caddy, "xray": xray})
	if err != nil {
		t.Fatal(err)
	}
	ins, _, err := instrument.Select(instruments)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	res, err := Run(context.Background(), plan, Deps{Transports: ts, Instruments: ins, Logf: t.Logf})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("tw across three hosts: %.1f s", time.Since(t0).Seconds())
	got := map[string]int{}
	for _, s := range res.Doc.Samples {
		if s.Instrument != instrument.Ready {
			got[s.Transport+"/"+s.Instrument]++
		}
		if s.Transport == "tw" && s.Instrument == "iperf3-1" {
			for _, r := range []string{"client", "relay", "server"} {
				if s.RoleCPUSec[r] <= 0 {
					t.Errorf("tw iperf3-1: %s CPU-s %.3f, want > 0 (every byte crosses the relay)", r, s.RoleCPUSec[r])
				}
			}
		}
	}
	for _, tr := range o.Transports {
		for _, in := range instruments {
			if got[tr+"/"+in] != 1 {
				t.Errorf("%s/%s: %d samples, want 1 (all: %v)", tr, in, got[tr+"/"+in], got)
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
	for _, f := range res.Doc.Failures {
		t.Errorf("failure: %+v", f)
	}
	for _, s := range res.Doc.Skipped {
		t.Errorf("skipped: %+v", s)
	}
	for _, m := range lab.Machines {
		if out := lab.Exec(t, m, "ls /run/netns /var/tmp /tmp | grep "+res.Prefix+"; grep "+res.Prefix+" /proc/mounts; true"); out != "" {
			t.Errorf("%s keeps %q", m.Name, out)
		}
	}
	if left := nstest.Residue(res.Prefix); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
