package compare

import (
	"reflect"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestHostDiffs: a role's host with another NIC or kernel makes the
// environments differ, another tool version is a tool difference, and a
// run across hosts differs from one on a single host; the login alone does
// not count.
func TestHostDiffs(t *testing.T) {
	host := func(role, login, driver string, mtu int, iperf string) results.Host {
		return results.Host{Roles: []string{role}, Login: login, Kernel: "6.1", Cores: 4, NIC: results.NIC{Iface: "eth1", Driver: driver, MTU: mtu},
			Tools: map[string]string{"iperf3": iperf}}
	}
	a, b := doc("6.18", 1, 1), doc("6.18", 1, 1)
	a.Env.Hosts = []results.Host{host("client", "root@10.0.0.2:22", "ixgbe", 1500, "iperf 3.12"), host("server", "root@10.0.0.3:22", "ixgbe", 1500, "iperf 3.12")}
	b.Env.Hosts = []results.Host{host("client", "root@192.168.0.2:22", "ixgbe", 1500, "iperf 3.12"), host("server", "root@10.0.0.3:22", "mlx5_core", 9000, "iperf 3.16")}
	if got, want := EnvDiffs(a, b), []string{`server host nic driver "ixgbe" vs "mlx5_core"`, `server host mtu "1500" vs "9000"`}; !reflect.DeepEqual(got, want) {
		t.Errorf("env diffs %q, want %q", got, want)
	}
	if got, want := ToolDiffs(a, b), []string{`server host iperf3 "iperf 3.12" vs "iperf 3.16"`}; !reflect.DeepEqual(got, want) {
		t.Errorf("tool diffs %q, want %q", got, want)
	}
	local := doc("6.18", 1, 1)
	if got, want := EnvDiffs(local, a), []string{`client host "the orchestrator" vs "root@10.0.0.2:22"`, `server host "the orchestrator" vs "root@10.0.0.3:22"`}; !reflect.DeepEqual(got, want) {
		t.Errorf("one host vs across hosts: %q, want %q", got, want)
	}
	if d := append(EnvDiffs(a, a), ToolDiffs(a, a)...); len(d) != 0 {
		t.Errorf("identical hosts differ: %q", d)
	}
	// A run on one host that recorded its machine (as every run does now)
	// is the same environment as an older one that did not: this machine's
	// kernel and CPU are the Environment's own, compared as such.
	here := doc("6.18", 1, 1)
	here.Env.Hosts = []results.Host{{Roles: []string{"client", "relay", "server"}, Login: results.LocalLogin, Kernel: "6.18", Cores: 2}}
	if d := append(EnvDiffs(local, here), ToolDiffs(here, local)...); len(d) != 0 {
		t.Errorf("one host with its machine recorded vs without: %q", d)
	}
	if got, want := EnvDiffs(here, a), []string{`client host "the orchestrator" vs "root@10.0.0.2:22"`, `server host "the orchestrator" vs "root@10.0.0.3:22"`}; !reflect.DeepEqual(got, want) {
		t.Errorf("one host (machine recorded) vs across hosts: %q, want %q", got, want)
	}
}
