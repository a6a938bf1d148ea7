package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// probeTimeout bounds one probe of the LAN outsider: a fenced role drops
// what it sends, so a probe that gets nothing ends here.
const probeTimeout = 2 * time.Second

// A third machine on the same switch, mid-run: it reaches the machines'
// own sshd (the control), but none of the roles' listening TCP ports
// (the bench sshd, iperf3 -s, netserver, …), no ping and no UDP of the
// roles; the roles' links carry no IPv6. Meanwhile the run measures.
func TestLANOutsiderReachesNoRole(t *testing.T) {
	nstest.RequireRoot(t)
	lab := remotetest.New(t, 3)
	out := t.TempDir()
	cmd, stderr := runOnLab(t, lab, out)
	waitSamples(t, filepath.Join(out, results.FileName), 2, cmd)
	prefix := runPrefix(t, out)
	outsider := lab.Machines[2]
	roles := map[string]struct {
		m    *remotetest.Machine
		addr string
	}{
		topology.Client: {lab.Machines[0], "10.226.0.60"},
		topology.Server: {lab.Machines[1], "10.226.0.61"},
	}
	// The controls: the outsider reaches the machines themselves.
	if err := dialFrom(outsider, lab.Machines[1].HostPort()); err != nil {
		t.Fatalf("control: the outsider cannot reach %s's sshd: %v", lab.Machines[1].Name, err)
	}
	if err := udpProbe(outsider, lab.Machines[1].Addr.String()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("control: UDP to %s's closed port: %v, want refused (its ICMP answer)", lab.Machines[1].Name, err)
	}
	var ports int
	for name, r := range roles {
		netns := prefix + "-" + name
		listening := lab.Exec(t, r.m, "ip netns exec "+netns+" ss -Hltn | awk '{print $4}'")
		for _, local := range strings.Fields(listening) {
			i := strings.LastIndex(local, ":")
			host, port := local[:i], local[i+1:]
			if !slices.Contains([]string{"*", "0.0.0.0", "[::]", r.addr}, host) {
				continue // loopback or a tunnel's inner address: not on the LAN
			}
			ports++
			target := net.JoinHostPort(r.addr, port)
			if err := dialFrom(outsider, target); err == nil {
				t.Errorf("the outsider connects to %s's %s (listening on %s)", name, target, local)
			}
		}
		if res, err := proc.Run(context.Background(), proc.Program{Name: "outsider/ping", NetNS: outsider.NS.Path(),
			Argv: []string{"ping", "-c", "1", "-W", "2", r.addr}}); err == nil {
			t.Errorf("the outsider pings %s at %s:\n%s", name, r.addr, res.Stdout)
		}
		if err := udpProbe(outsider, r.addr); errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("UDP from the outsider reaches %s: its closed port answered", name)
		}
		v6 := lab.Exec(t, r.m, "ip netns exec "+netns+" sh -c 'cat /proc/sys/net/ipv6/conf/"+topology.RoleLink+
			"/disable_ipv6; ip -6 -o addr show dev "+topology.RoleLink+"'")
		if v6 != "1" {
			t.Errorf("%s's link: disable_ipv6 and IPv6 addresses %q, want 1 and none", name, v6)
		}
	}
	if ports < 3 {
		t.Errorf("%d listening ports found on the roles' addresses, want the server's sshd, iperf3 and netserver at least", ports)
	}
	if cmd.ProcessState != nil {
		t.Fatalf("the run ended during the probes\n%s", stderr.String())
	}
	// The run still measures: the fence lets the peers through.
	waitSamples(t, filepath.Join(out, results.FileName), 3, cmd)
	cmd.Process.Kill()
	cmd.Wait()
	waitClean(t, lab, prefix, 30*time.Second)
	cleanOrchestrator(t, prefix)
}

// dialFrom connects to addr over TCP from inside machine m.
func dialFrom(m *remotetest.Machine, addr string) error {
	return m.NS.Do(func() error {
		c, err := net.DialTimeout("tcp", addr, probeTimeout)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// udpProbe sends a datagram from inside machine m to host's discard port,
// closed on every machine and role here, and waits for the answer: an
// ICMP port unreachable shows as ECONNREFUSED; a timeout means the
// datagram never reached a stack that would answer.
func udpProbe(m *remotetest.Machine, host string) error {
	return m.NS.Do(func() error {
		c, err := net.Dial("udp", net.JoinHostPort(host, "9"))
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write([]byte("twnsbench probe")); err != nil {
			return err
		}
		c.SetReadDeadline(time.Now().Add(probeTimeout))
		_, err = c.Read(make([]byte, 16))
		return err
	})
}

// addr= naming an address in use is refused: a machine of the run's own
// (the server's host, the client's, the orchestrator standing for the
// gateway) before anything exists, with exit 2 and one line; one only the
// network knows (a third machine's) by the role's ARP probe before its
// link takes the address. Either way every machine keeps its address and
// its SSH session, and nothing of the run.
func TestRunRefusesAddrInUse(t *testing.T) {
	nstest.RequireRoot(t)
	lab := remotetest.New(t, 3)
	m0, m1 := lab.Machines[0].Addr.String(), lab.Machines[1].Addr.String()
	client := "client=root@" + m0 + ",addr=10.226.0.90/24"
	run := func(serverAddr string) (int, string, string) {
		out := filepath.Join(t.TempDir(), "out")
		code, _, stderr := inOrch(t, lab, "run", "--quick", "--runs", "1", "--transports", "ssh", "--instruments", "tcp_rr",
			"--congestion", "host", "--out", out, "--identity", lab.Identity, "--known-hosts", lab.KnownHosts, "--connect-timeout", "3s",
			"--host", client, "--host", "server=root@"+m1+",addr="+serverAddr+"/24")
		return code, strings.TrimSpace(stderr), out
	}
	for _, tc := range []struct{ addr, want string }{
		{m1, "server: root@" + m1 + ":22: addr " + m1 + " is root@" + m1 + ":22's own address on eth0"},
		{m0, "server: root@" + m1 + ":22: addr " + m0 + " is root@" + m0 + ":22's own address on eth0"},
		{lab.OrchAddr.String(), "server: root@" + m1 + ":22: addr " + lab.OrchAddr.String() + " is this machine's address"},
	} {
		code, stderr, out := run(tc.addr)
		if code != exitRefused || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "\n") {
			t.Errorf("addr=%s: exit %d, stderr %q; want exit 2 and one line with %q", tc.addr, code, stderr, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("addr=%s: created the output directory", tc.addr)
		}
	}
	// The third machine is no host of the run: its answer to the probe
	// refuses the address.
	outsider := lab.Machines[2].Addr.String()
	code, stderr, out := run(outsider)
	last := lastLine(stderr)
	if code == exitOK || !strings.Contains(last, "addr "+outsider+" is in use on the network (") {
		t.Errorf("addr=%s (a third machine's): exit %d, last line %q; want a failure saying it is in use", outsider, code, last)
	}
	t.Logf("addr=%s: exit %d: %s", outsider, code, last)
	if left := leftoversOf(runPrefix(t, out)); len(left) > 0 {
		t.Errorf("left on this machine: %v", left)
	}
	// Each machine's /run is its own: any namespace there is a run's.
	for _, m := range lab.Machines {
		if k := lab.Exec(t, m, "ls /run/netns 2>/dev/null; ip -4 -o addr show dev eth0 | grep -c "+m.Addr.String()); k != "1" {
			t.Errorf("%s: keeps %q, want its one address and no namespace of the run", m.Name, k)
		}
	}
}
