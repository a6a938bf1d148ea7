package main

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

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
	requireRoot(t)
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
