package role_test

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

func TestMain(m *testing.M) { nstest.Main(m) }

// A role's processes run in its namespace and its cgroup leaf, see its
// hosts file, and its counters read its own namespace; a transport's leaf
// holds that transport's processes only; Remove leaves nothing.
func TestRoleRunsInItsNamespaceAndCgroup(t *testing.T) {
	topo, _, roles := nstest.Roles(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := roles[topology.Client]
	if client.Name() != topology.Client || client.Addr() != topo.Spec.Addr(topology.Client) {
		t.Errorf("client is %s at %s", client.Name(), client.Addr())
	}

	// The namespace: the client's eth0 holds the client's address.
	res, err := client.Run(ctx, "ip", "-4", "-o", "addr", "show", "dev", topology.RoleLink)
	if err != nil || !strings.Contains(string(res.Stdout), client.Addr().String()+"/") {
		t.Errorf("ip addr in the client: %q, %v", res.Stdout, err)
	}
	// The hosts file: the relay's name resolves to the relay's address.
	res, err = client.Run(ctx, "getent", "hosts", "relay.tw.test")
	if err != nil || !strings.HasPrefix(string(res.Stdout), topo.Spec.Addr(topology.Relay).String()) {
		t.Errorf("getent hosts relay.tw.test in the client: %q, %v", res.Stdout, err)
	}
	// The cgroup: a process started from Spec is in the leaf, and the
	// role's CPU counts it.
	p, err := client.Start(ctx, client.Program("sleep", "sleep", "30"))
	if err != nil {
		t.Fatal(err)
	}
	pids, err := role.PIDs(ctx, client)
	if err != nil || !slices.Contains(pids, p.PID()) {
		t.Errorf("sleep %d not in the client's leaf: %v, %v", p.PID(), pids, err)
	}
	p.Stop(time.Second)
	if _, err := role.CPUUsec(ctx, client); err != nil {
		t.Error(err)
	}

	// A transport's leaf holds its own processes, apart from the base.
	own, err := role.ForTransport(ctx, roles, "fake")
	if err != nil {
		t.Fatal(err)
	}
	server := own[topology.Server]
	sp, err := server.Start(ctx, server.Program("sleep", "sleep", "30"))
	if err != nil {
		t.Fatal(err)
	}
	own1, err1 := role.PIDs(ctx, server)
	base, err2 := role.PIDs(ctx, roles[topology.Server])
	if err1 != nil || err2 != nil || !slices.Contains(own1, sp.PID()) || slices.Contains(base, sp.PID()) {
		t.Errorf("sleep %d: transport leaf %v (%v), base %v (%v)", sp.PID(), own1, err1, base, err2)
	}
	sp.Stop(time.Second)
	if _, err := server.Run(ctx, "true"); err != nil {
		t.Error(err)
	}
	if _, err := role.OwnCPUUsec(ctx, server); err != nil {
		t.Error(err)
	}

	// Counters read the role's own namespace: nothing listens on 22 in a
	// fresh namespace, and its /proc/sys is readable.
	if st, err := role.TCP(ctx, server); err != nil || metrics.OpenConns(st.Sockets, 22) != 0 {
		t.Errorf("open TCP connections on 22 in a fresh server namespace: %v, %v", st.Sockets, err)
	}
	if _, err := role.UDPStats(ctx, server); err != nil {
		t.Error(err)
	}
	if b, err := role.ReadFile(ctx, server, "/proc/sys/net/ipv4/ip_forward"); err != nil || len(b) == 0 {
		t.Errorf("ip_forward: %q, %v", b, err)
	}
	if _, err := role.RxBytes(ctx, client); err != nil {
		t.Error(err)
	}

	// Ops run in the role's namespace: an address put on the server's lo
	// is there and not on the client's, and gone once removed.
	inner := netip.MustParseAddr("10.254.254.1")
	if err := role.AddLoopback(ctx, server, inner); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	if err := server.WaitTCP(short, "127.0.0.1:1", nil); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1 from server") {
		t.Errorf("WaitTCP on a closed port: %v", err)
	}
	cancelShort()
	onLo := func(r *role.Role) bool {
		res, err := r.Run(ctx, "ip", "-o", "addr", "show", "dev", "lo")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(res.Stdout), inner.String()+"/32")
	}
	if !onLo(server) || onLo(client) {
		t.Errorf("%s on lo: server %v, client %v", inner, onLo(server), onLo(client))
	}
	if err := role.RemoveLoopback(ctx, server, inner); err != nil || onLo(server) {
		t.Errorf("remove %s: %v, still there: %v", inner, err, onLo(server))
	}
	// A file written for the role's processes is what they read.
	f := filepath.Join(t.TempDir(), "conf")
	if err := role.WriteFile(ctx, server, f, []byte("x=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res, err := server.Run(ctx, "cat", f); err != nil || string(res.Stdout) != "x=1\n" {
		t.Errorf("cat %s in the server: %q, %v", f, res.Stdout, err)
	}
}

// A role kept on CPUs starts every process there, daemons and tools, its
// transport leaves too; the role it came from is left as it was.
func TestRoleOnCPUs(t *testing.T) {
	_, _, roles := nstest.Roles(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cpus, err := metrics.AffinityCPUs()
	if err != nil {
		t.Fatal(err)
	}
	last := cpus[len(cpus)-1:]
	want := "Cpus_allowed_list:\t" + metrics.FormatCPUList(last)
	pinned := roles[topology.Server].OnCPUs(last)
	own, err := role.ForTransport(ctx, map[string]*role.Role{topology.Server: pinned}, "fake")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*role.Role{pinned, own[topology.Server]} {
		p, err := r.Start(ctx, r.Program("sleep", "sleep", "30"))
		if err != nil {
			t.Fatal(err)
		}
		// Start returns once the launcher is forked: wait until it has
		// exec'd sleep.
		var status []byte
		err = proc.WaitUntil(ctx, "sleep exec'd", func() (err error) {
			status, err = role.ReadFile(ctx, r, "/proc/"+strconv.Itoa(p.PID())+"/status")
			if err == nil && !strings.HasPrefix(string(status), "Name:\tsleep\n") {
				err = errors.New("not yet")
			}
			return err
		}, p)
		p.Stop(time.Second)
		if err != nil || !strings.Contains(string(status), want+"\n") {
			t.Errorf("daemon: %v, status without %q:\n%s", err, want, status)
		}
		res, err := r.Run(ctx, "grep", "Cpus_allowed_list", "/proc/self/status")
		if err != nil || strings.TrimSpace(string(res.Stdout)) != want {
			t.Errorf("tool: %q, %v; want %q", res.Stdout, err, want)
		}
	}
	res, err := roles[topology.Server].Run(ctx, "grep", "Cpus_allowed_list", "/proc/self/status")
	if all := "Cpus_allowed_list:\t" + metrics.FormatCPUList(cpus); err != nil || strings.TrimSpace(string(res.Stdout)) != all {
		t.Errorf("the role it came from: %q, %v; want %q", res.Stdout, err, all)
	}
}
