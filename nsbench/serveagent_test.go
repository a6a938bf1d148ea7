package nsbench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/residue"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// machineAgent starts `twnsbench agent SCOPE` inside machine m, as sshd
// would on another host, joined to the returned Wire by its stdin and
// stdout. done receives its exit.
func machineAgent(t *testing.T, m nstest.Machine, scope string, idle time.Duration) (c *role.Wire, stdin io.WriteCloser, done <-chan error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv, planEnv, err := ns.HelperCommand(ns.Plan{NetNS: m.NS.Path(), HostMounts: true,
		Argv: []string{self, agentArg, scope, idle.String()}})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), planEnv)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err = cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		if stderr.Len() > 0 {
			t.Logf("agent %s: %s", scope, stderr.String())
		}
		ch <- err
		close(exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	})
	return role.NewWire(m.NS.Name, stdout, stdin), stdin, ch
}

// Roles on two machines, reached only through their agents: a role's
// namespace on each machine's interface, iperf3 between them; when the
// orchestrator's end closes (or goes quiet: a cut link), each agent stops
// what it started and removes what it built, within its bound.
func TestRolesOnTwoMachines(t *testing.T) {
	nstest.RequireRoot(t)
	prefix := nstest.Prefix(t)
	ms := nstest.Machines(t, prefix, netip.MustParsePrefix("10.250.8.0/24"))
	peers := map[string]netip.Addr{topology.Client: netip.MustParseAddr("10.250.8.11"), topology.Server: netip.MustParseAddr("10.250.8.12")}
	spec := topology.DefaultSpec(prefix)
	spec.HostNames = nil
	spec.Congestion = "" // a machine's namespace cannot extend the host's allowed list
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const idle = 3 * time.Second
	t0 := time.Now()
	defer func() { t.Logf("total %v", time.Since(t0)) }()
	roles := map[string]*role.Role{}
	stdins := map[string]io.WriteCloser{}
	dones := map[string]<-chan error{}
	for i, name := range []string{topology.Client, topology.Server} {
		scope := role.Scope(prefix, name)
		c, stdin, done := machineAgent(t, ms[i], scope, idle)
		if name == topology.Client {
			c.KeepAlive() // the server's agent gets no pings: its link is "cut"
		}
		stdins[name], dones[name] = stdin, done
		r, h, err := role.BuildRole(ctx, c, role.RoleOnHost{
			Link: topology.LinkSpec{Spec: spec, Role: name, Parent: nstest.MachineNIC, Addr: netip.PrefixFrom(peers[name], 24), Peers: peers},
			Dirs: role.Dirs{Log: "/tmp/" + scope, Private: "/tmp/" + scope},
		})
		if err != nil {
			t.Fatal(err)
		}
		if h.Offloads == "" || h.NetNS != spec.NetnsName(name) {
			t.Errorf("%s built: %+v", name, h)
		}
		roles[name] = r
	}

	srvAddr := net.JoinHostPort(peers[topology.Server].String(), "5201")
	srv, err := roles[topology.Server].Start(ctx, roles[topology.Server].Program("iperf3", "iperf3", "-s", "-p", "5201"))
	if err != nil {
		t.Fatal(err)
	}
	if err := roles[topology.Client].WaitTCP(ctx, srvAddr, srv); err != nil {
		t.Fatal(err)
	}
	res, err := roles[topology.Client].Run(ctx, "iperf3", "-c", peers[topology.Server].String(), "-p", "5201", "-t", "1", "-J")
	if err != nil {
		t.Fatalf("iperf3 across the machines: %v\n%s", err, res.Stdout)
	}
	var out struct {
		End struct {
			SumReceived struct {
				Bps float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(res.Stdout, &out); err != nil || out.End.SumReceived.Bps <= 0 {
		t.Fatalf("iperf3 result: %v, %.0f bit/s", err, out.End.SumReceived.Bps)
	}
	t.Logf("iperf3 client on %s → server on %s: %.2f Gbit/s", ms[0].NS.Name, ms[1].NS.Name, out.End.SumReceived.Bps/1e9)
	srvPID := srv.PID()
	t.Logf("measured at %v", time.Since(t0))

	// The server's agent heard nothing for its idle bound (no pings: a cut
	// link): it has stopped iperf3 and removed its role.
	select {
	case <-dones[topology.Server]:
	case <-time.After(idle + 25*time.Second):
		t.Fatal("server's agent still there after its idle bound")
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(srvPID)); err == nil {
		t.Errorf("iperf3 server %d still runs after its agent ended", srvPID)
	}
	if left := residue.Find(role.Scope(prefix, topology.Server)); len(left) > 0 {
		t.Errorf("server's machine keeps %v", left)
	}
	t.Logf("server agent gone at %v", time.Since(t0))
	// The client's agent still serves (pinged) until its stdin closes.
	if _, err := role.UDPStats(ctx, roles[topology.Client]); err != nil {
		t.Errorf("client's agent, still pinged: %v", err)
	}
	stdins[topology.Client].Close()
	select {
	case err := <-dones[topology.Client]:
		if err != nil {
			t.Errorf("client's agent: %v", err)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("client's agent still there 25 s after its stdin closed")
	}
	if left := residue.Find(role.Scope(prefix, topology.Client)); len(left) > 0 {
		t.Errorf("client's machine keeps %v", left)
	}
}
