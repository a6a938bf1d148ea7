package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
// roles, over IPv4 or over IPv6 to the link-local address of any of the
// roles' links; no namespace of the run has IPv6. Meanwhile the run
// measures. On the LAN and during a WAN cell made by the userspace
// forwarder, whose edge (wan0, wire0: topology's LinkSpec.Edge) puts
// links beside the role's own on the host's network.
func TestLANOutsiderReachesNoRole(t *testing.T) {
	nstest.RequireRoot(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"lan", nil},
		// A short WAN after a short LAN: the probes run during its cells.
		{"wan-userspace", []string{"--runs", "4", "--wan", "30ms:0%", "--nic", "reference", "--impairment", "userspace"}},
	} {
		t.Run(tc.name, func(t *testing.T) { lanOutsider(t, tc.args) })
	}
}

func lanOutsider(t *testing.T, extra []string) {
	lab := remotetest.New(t, 3)
	out := t.TempDir()
	cmd, stderr := runOnLab(t, lab, out, extra...)
	wan := len(extra) > 0
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
	inCell := func() bool { // every role's pipe split: the forwarder in its place
		for name, r := range roles {
			if strings.Contains(lab.Exec(t, r.m, "ip netns exec "+prefix+"-"+name+" tc qdisc show dev "+topology.WireLink), "clsact") {
				return false
			}
		}
		return true
	}
	if wan {
		waitFor(t, 3*time.Minute, cmd, "the WAN cell's forwarders on both hosts", inCell)
	}
	// The controls: the outsider reaches the machines themselves, over
	// IPv4 and IPv6.
	if err := dialFrom(outsider, lab.Machines[1].HostPort()); err != nil {
		t.Fatalf("control: the outsider cannot reach %s's sshd: %v", lab.Machines[1].Name, err)
	}
	if err := udpProbe(outsider, lab.Machines[1].Addr.String()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("control: UDP to %s's closed port: %v, want refused (its ICMP answer)", lab.Machines[1].Name, err)
	}
	own, _ := linkLocals(t, lab, lab.Machines[1], "", remotetest.Iface)
	if len(own) != 1 {
		t.Fatalf("control: %s's %s has link-local addresses %v, want one", lab.Machines[1].Name, remotetest.Iface, own)
	}
	if res, err := proc.Run(context.Background(), proc.Program{Name: "outsider/ping", NetNS: outsider.NS.Path(),
		Argv: []string{"ping", "-c", "1", "-W", "2", own[0] + "%" + remotetest.Iface}}); err != nil {
		t.Fatalf("control: the outsider cannot ping %s over IPv6 at %s: %v\n%s%s", lab.Machines[1].Name, own[0], err, res.Stdout, res.Stderr)
	}
	var probes []outsiderProbe
	var ports int
	for name, r := range roles {
		netns := prefix + "-" + name
		listening := lab.Exec(t, r.m, "ip netns exec "+netns+" ss -Hltn | awk '{print $4}'")
		t.Logf("%s listens on %s", name, strings.Join(strings.Fields(listening), " "))
		var lanPorts []string
		for _, local := range strings.Fields(listening) {
			i := strings.LastIndex(local, ":")
			host, port := local[:i], local[i+1:]
			if !slices.Contains([]string{"*", "0.0.0.0", "[::]", r.addr}, host) {
				continue // loopback or a tunnel's inner address: not on the LAN
			}
			ports++
			lanPorts = append(lanPorts, port)
		}
		hosts := []string{r.addr}
		// Every link's link-local address, as it has it or as the kernel
		// would give it (EUI-64 from its MAC) were IPv6 on.
		links := strings.Fields(lab.Exec(t, r.m, "ip netns exec "+netns+" ls /sys/class/net"))
		if wan && !slices.Contains(links, topology.WireLink) {
			t.Fatalf("%s's links %v: no %s, the edge a WAN across hosts builds", name, links, topology.WireLink)
		}
		for _, l := range links {
			if l == "lo" {
				continue
			}
			has, eui := linkLocals(t, lab, r.m, netns, l)
			for _, a := range append(has, eui) {
				if !slices.Contains(hosts, a+"%"+remotetest.Iface) {
					hosts = append(hosts, a+"%"+remotetest.Iface)
				}
			}
		}
		for _, h := range hosts {
			for _, port := range lanPorts {
				target := net.JoinHostPort(h, port)
				probes = append(probes, outsiderProbe{fmt.Sprintf("connects to %s's %s", name, target), func() bool {
					return dialFrom(outsider, target) == nil
				}})
			}
			ping := []string{"ping", "-c", "1", "-W", "2", h}
			probes = append(probes, outsiderProbe{fmt.Sprintf("pings %s at %s", name, h), func() bool {
				_, err := proc.Run(context.Background(), proc.Program{Name: "outsider/ping", NetNS: outsider.NS.Path(), Argv: ping})
				return err == nil
			}})
			probes = append(probes, outsiderProbe{fmt.Sprintf("gets UDP to %s at %s answered", name, h), func() bool {
				return errors.Is(udpProbe(outsider, h), syscall.ECONNREFUSED)
			}})
		}
		// No namespace of the run has IPv6: not on any link, nor on a
		// link it gets later (conf/default), nor anywhere (conf/all); only
		// loopback keeps its ::1.
		v6 := lab.Exec(t, r.m, "ip netns exec "+netns+" sh -c 'cd /proc/sys/net/ipv6/conf && grep -H . */disable_ipv6; ip -6 -o addr'")
		for _, l := range strings.Split(v6, "\n") {
			f := strings.Fields(l)
			loopback := l == "lo/disable_ipv6:0" || len(f) > 3 && f[1] == "lo" && f[3] == "::1/128"
			if !loopback && !strings.HasSuffix(l, "/disable_ipv6:1") {
				t.Errorf("%s's namespace: %q, want disable_ipv6 1 everywhere but lo and no IPv6 address but ::1\n%s", name, l, v6)
			}
		}
	}
	if ports < 3 {
		t.Errorf("%d listening ports found on the roles' addresses, want the server's sshd, iperf3 and netserver at least", ports)
	}
	var wg sync.WaitGroup
	reached := make([]bool, len(probes))
	for i, p := range probes {
		wg.Go(func() { reached[i] = p.reached() })
	}
	wg.Wait()
	for i, p := range probes {
		if reached[i] {
			t.Errorf("the outsider %s", p.what)
		}
	}
	t.Logf("%d probes from the outsider", len(probes))
	if cmd.ProcessState != nil {
		t.Fatalf("the run ended during the probes\n%s", stderr.String())
	}
	if wan && !inCell() {
		t.Fatal("the WAN cell ended during the probes: they proved nothing of it")
	}
	// The run still measures: the fence lets the peers through.
	doc, err := results.Read(filepath.Join(out, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	waitSamples(t, filepath.Join(out, results.FileName), len(doc.Samples)+1, cmd)
	cmd.Process.Kill()
	cmd.Wait()
	waitClean(t, lab, prefix, 30*time.Second)
	cleanOrchestrator(t, prefix)
}

// outsiderProbe is one thing the outsider tries; reached says it got
// through to a role.
type outsiderProbe struct {
	what    string
	reached func() bool
}

// linkLocals returns the IPv6 link-local addresses link in netns ("": the
// machine's own) on machine m has, and the one the kernel derives from its
// MAC (EUI-64), which it would get were IPv6 on.
func linkLocals(t *testing.T, lab *remotetest.Lab, m *remotetest.Machine, netns, link string) (has []string, eui string) {
	t.Helper()
	pre := ""
	if netns != "" {
		pre = "ip netns exec " + netns + " "
	}
	out := lab.Exec(t, m, pre+"sh -c 'cat /sys/class/net/"+link+"/address; ip -6 -o addr show dev "+link+" scope link'")
	lines := strings.Split(out, "\n")
	mac, err := net.ParseMAC(lines[0])
	if err != nil || len(mac) != 6 {
		t.Fatalf("%s %s: MAC %q: %v", m.Name, link, lines[0], err)
	}
	eui = netip.AddrFrom16([16]byte{0: 0xfe, 1: 0x80, 8: mac[0] ^ 2, 9: mac[1], 10: mac[2], 11: 0xff, 12: 0xfe, 13: mac[3], 14: mac[4], 15: mac[5]}).String()
	for _, l := range lines[1:] {
		f := strings.Fields(l) // 2: eth0    inet6 fe80::…/64 scope link …
		if len(f) > 3 {
			if a, _, ok := strings.Cut(f[3], "/"); ok {
				has = append(has, a)
			}
		}
	}
	return has, eui
}

// waitFor polls cond until it holds, within bound, while cmd runs.
func waitFor(t *testing.T, bound time.Duration, cmd *exec.Cmd, what string, cond func() bool) {
	t.Helper()
	t0 := time.Now()
	for delay := 100 * time.Millisecond; !cond(); delay = min(2*delay, time.Second) {
		if cmd.ProcessState != nil || time.Since(t0) > bound {
			t.Fatalf("no %s within %v (the run ended: %v)", what, bound, cmd.ProcessState != nil)
		}
		time.Sleep(delay) // polling the machines for a condition
	}
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
