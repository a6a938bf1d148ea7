package nsbench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// labHosts is an inventory putting the client on machine 0 and the server
// on machine 1 of lab, each role at an address of its own on the lab's
// network.
func labHosts(t *testing.T, lab *remotetest.Lab) Hosts {
	var hs []hosts.Host
	for i, r := range []string{"client", "server"} {
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

// A run with the client and the server on two machines reached over SSH:
// the same rows and samples as on one host, and nothing left on either
// machine afterwards.
func TestRunAcrossHosts(t *testing.T) {
	nstest.RequireRoot(t)
	if testing.Short() {
		t.Skip("integration test (skipped by -short)")
	}
	lab := remotetest.New(t, 2)
	o := Quick()
	o.Transports = []string{"ssh", "wireguard-go"}
	o.Runs, o.Duration, o.Warmup, o.WAN = 1, time.Second, 0, []string{"off"}
	o.Congestion = "host" // a machine's namespace cannot extend the host's allowed list
	o.OutDir = t.TempDir()
	o.Hosts = labHosts(t, lab)
	plan, err := NewPlan(o, transport.Names())
	if err != nil {
		t.Fatal(err)
	}
	ts, err := transport.Build(o.Transports, nil)
	if err != nil {
		t.Fatal(err)
	}
	ins, _, err := instrument.Select([]string{"iperf3-1", "tcp_rr"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	res, err := Run(context.Background(), plan, Deps{Transports: ts, Instruments: ins, Logf: t.Logf})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("run across hosts: %.1f s", time.Since(t0).Seconds())
	got := map[string]int{}
	for _, s := range res.Doc.Samples {
		if s.Instrument != instrument.Ready {
			got[s.Transport+"/"+s.Instrument]++
		}
	}
	for _, tr := range o.Transports {
		for _, in := range []string{"iperf3-1", "tcp_rr"} {
			if got[tr+"/"+in] != 1 {
				t.Errorf("%s/%s: %d samples, want 1 (all: %v)", tr, in, got[tr+"/"+in], got)
			}
		}
	}
	for _, f := range res.Doc.Failures {
		t.Errorf("failure: %+v", f)
	}
	for _, m := range lab.Machines {
		if out := lab.Exec(t, m, "ls /run/netns /var/tmp | grep "+res.Prefix+" || true"); out != "" {
			t.Errorf("%s keeps %q", m.Name, out)
		}
	}
	if left := nstest.Residue(res.Prefix); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
