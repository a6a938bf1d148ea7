package nsbench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// The many-client sweep with the server and the clients on two machines
// reached over SSH: Pure SSH at 1 and 2 clients, each client a namespace
// of its own on the client's machine at the address after the one before
// (10.226.0.81, then .82), every client measured, and nothing of the
// sweep left on either machine: neither a testbed's roles nor the copies.
func TestSweepAcrossHosts(t *testing.T) {
	requireSweepTools(t)
	if testing.Short() {
		t.Skip("integration test (skipped by -short)")
	}
	lab := remotetest.New(t, 2)
	o := SweepDefaults([]int{1, 2})
	o.Duration, o.OutDir, o.Transports = 2*time.Second, t.TempDir(), []string{"ssh"}
	o.Hosts = labHostsAt(t, lab, 80, "server", "client") // the server .80, the clients .81 and .82
	plan, err := NewPlan(o, transport.Names())
	if err != nil {
		t.Fatal(err)
	}
	// The sweep's cubic, where the allowed list lacks it, is set by
	// extending that global list for a moment, which a machine's
	// namespace cannot: the machines keep the host's default, as the
	// runs across hosts of these tests do (--congestion host).
	plan.Congestion = "host"
	ctx := context.Background()
	t0 := time.Now()
	// As runAction does: the hosts reached and the rows checked there.
	sites, err := OpenSites(ctx, plan.Hosts)
	if err != nil {
		t.Fatal(err)
	}
	ts := []transport.Transport{transport.SSH{}}
	if err := sites.CheckNamed(ctx, ts, transport.Recipe{}); err != nil {
		sites.Close()
		t.Fatal(err)
	}
	res, err := Run(ctx, plan, Deps{Transports: ts, Logf: t.Logf, Sites: sites})
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	t.Logf("sweep across 2 hosts: %.1f s", time.Since(t0).Seconds())
	doc := res.Clients
	if len(doc.Rows) != 2 || len(doc.Skipped) > 0 {
		t.Fatalf("rows %+v, skipped %+v; want N=1 and N=2", doc.Rows, doc.Skipped)
	}
	for i, r := range doc.Rows {
		if r.N != i+1 {
			t.Errorf("row %d: N=%d", i, r.N)
		}
		checkRow(t, r)
	}
	// Where each client ran: its address on the client's machine.
	client := o.Hosts.Inventory.Hosts[1].Dest()
	for _, want := range []string{"server 10.226.0.80 on " + o.Hosts.Inventory.Hosts[0].Dest(), "client 10.226.0.81 on " + client, "client2 10.226.0.82 on " + client} {
		if !strings.Contains(doc.Env.Topology, want) {
			t.Errorf("env.topology %q: want %q", doc.Env.Topology, want)
		}
	}
	if i := slices.IndexFunc(doc.Env.Hosts, func(h results.Host) bool { return h.Login == client }); i < 0 ||
		!slices.Equal(doc.Env.Hosts[i].Roles, []string{"client", "client2"}) || doc.Env.Hosts[i].Kernel == "" ||
		doc.Env.Hosts[i].RoleLinks == nil || doc.Env.Hosts[i].RoleLinks.Offloads == "" {
		t.Errorf("env.hosts %+v: want the client's machine with client and client2, its facts read and its role links' settings", doc.Env.Hosts)
	}
	md, err := os.ReadFile(filepath.Join(o.OutDir, report.ClientsReportFile))
	if err != nil || !strings.Contains(string(md), "client2 10.226.0.82 on "+client) || !strings.Contains(string(md), "| client, client2 | "+client+" |") {
		t.Errorf("the report does not say where each client ran (%v):\n%s", err, md)
	}
	for _, r := range doc.Rows {
		t.Logf("N=%d: %v Mbit/s, setup %.1f s, teardown %.1f s", r.N, r.PerClientMbps, r.Timing.SetupSec, r.Timing.TeardownSec)
	}
	// Every testbed's logs came back from the machines, named for it.
	beds, err := os.ReadDir(filepath.Join(o.OutDir, "logs"))
	if err != nil || len(beds) != 2 {
		t.Fatalf("log directories %v, %v: want one per testbed", beds, err)
	}
	for _, b := range beds {
		if _, err := os.Stat(filepath.Join(o.OutDir, "logs", b.Name(), "server-sshd.log")); err != nil {
			t.Errorf("sshd's log not fetched from the server's machine: %v", err)
		}
		checkNothingLeft(t, lab, b.Name())
	}
	checkNothingLeft(t, lab, sites.Prefix())
}
