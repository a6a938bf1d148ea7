package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestHostsTable: a run across hosts says where each role ran and lists
// each machine; what was not read is a dash, never a 0. A run on one host
// has no Hosts block (the golden files hold it).
func TestHostsTable(t *testing.T) {
	d := twnsbenchDoc()
	d.Env.Hosts = []results.Host{
		{Roles: []string{"client"}, Login: "root@10.0.0.2:22", Kernel: "6.1.0-18-amd64", CPUModel: "Xeon E-2236", Cores: 12,
			NIC:   results.NIC{Iface: "eth1", Driver: "ixgbe", SpeedMbps: 10000, MTU: 9000, Offloads: "tso/gso/gro on"},
			Tools: map[string]string{"ssh": "OpenSSH_9.2p1", "iperf3": "iperf 3.12"}},
		{Roles: []string{"server", "relay"}, Login: "bench@10.0.0.3:2222", Kernel: "6.8.0", NIC: results.NIC{Iface: "eth0", Driver: "macvlan", MTU: 1500}},
	}
	md := string(Markdown(d))
	for _, want := range []string{
		"### Hosts",
		"Where each role ran: client on root@10.0.0.2:22 (eth1), server and relay on bench@10.0.0.3:2222 (eth0).",
		"| Role | Login | Kernel | CPU | Cores | Interface | NIC driver | Speed | MTU | Offloads | Tools |",
		"| client | root@10.0.0.2:22 | 6.1.0-18-amd64 | Xeon E-2236 | 12 | eth1 | ixgbe | 10 Gbit/s | 9000 | tso/gso/gro on | iperf3: iperf 3.12; ssh: OpenSSH_9.2p1 |",
		"| server, relay | bench@10.0.0.3:2222 | 6.8.0 | — | — | eth0 | macvlan | — | 1500 | — | — |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, section(md, "## Environment"))
		}
	}
	if strings.Contains(md, "namespaces on one host") || !strings.Contains(md, "on the host named for it") {
		t.Errorf("the introduction does not say the roles ran on their hosts:\n%s", md[:min(len(md), 800)])
	}
	env := section(md, "## Environment")
	if !strings.Contains(env, "### Hosts") {
		t.Errorf("the hosts are not in the Environment:\n%s", env)
	}
	page := string(HTML(d))
	for _, want := range []string{`>Hosts</h3>`, "<td>server, relay</td>", "<td>10 Gbit/s</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}

	for _, hs := range [][]results.Host{nil, {{Roles: []string{"client", "relay", "server"}, Login: results.LocalLogin, Kernel: "6.12"}}} {
		d.Env.Hosts = hs
		if md := string(Markdown(d)); strings.Contains(md, "Hosts") || !strings.Contains(md, "namespaces on one host") {
			t.Errorf("a run on one host (hosts %v) states hosts, or not its one host:\n%s", hs, section(md, "## Environment"))
		}
	}
}

// section is md from heading to the next "## ".
func section(md, heading string) string {
	i := strings.Index(md, heading+"\n")
	if i < 0 {
		return ""
	}
	rest := md[i+len(heading):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return heading + rest
}

func TestSpeedText(t *testing.T) {
	for mbps, want := range map[int]string{0: dash, -1: dash, 100: "100 Mbit/s", 1000: "1 Gbit/s", 2500: "2.5 Gbit/s", 25000: "25 Gbit/s"} {
		if got := speedText(mbps); got != want {
			t.Errorf("speedText(%d) = %q, want %q", mbps, got, want)
		}
	}
}
