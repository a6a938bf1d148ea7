package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// runOnLab starts `twnsbench run --host …` from the lab's orchestrator
// namespace, the client on machine 0 and the server on machine 1.
func runOnLab(t *testing.T, lab *remotetest.Lab, out string, extra ...string) (*exec.Cmd, *bytes.Buffer) {
	return runOnLabWith(t, lab, out, fmt.Sprintf("client=root@%s,addr=10.226.0.60/24", lab.Machines[0].Addr), extra...)
}

// runOnLabWith is runOnLab with the client's entry given ("client=local,…"
// keeps it on the orchestrator).
func runOnLabWith(t *testing.T, lab *remotetest.Lab, out, client string, extra ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{self, "run", "--drift-probe=false", "--transports", "ssh", "--instruments", "iperf3-1", "--quick", "--runs", "20",
		"--congestion", "host", "--out", out, "--identity", lab.Identity, "--known-hosts", lab.KnownHosts,
		"--host", client,
		"--host", fmt.Sprintf("server=root@%s,addr=10.226.0.61/24", lab.Machines[1].Addr)}
	argv, planEnv, err := ns.HelperCommand(ns.Plan{NetNS: lab.Orch.Path(), HostMounts: true, Argv: append(args, extra...)})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), asCommandEnv+"=1", planEnv)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, &stderr
}

// machineKeeps lists what of run prefix machine m still holds: a role's
// namespace (in the machine's own /run), copy of twnsbench, private
// directory, cgroups or processes — all named <prefix>-<role>. (Each
// machine has a /tmp of its own; cgroups and processes are the one
// kernel's, so a local role's would show here too.)
func machineKeeps(t *testing.T, lab *remotetest.Lab, m *remotetest.Machine, prefix string) string {
	return lab.Exec(t, m, fmt.Sprintf("{ ls /run/netns /var/tmp /tmp /sys/fs/cgroup; ps -eo args; } 2>/dev/null | grep -F %s- | grep -v grep || true", prefix))
}

// cleanOrchestrator removes what the killed orchestrator left on its own
// host (its private directory), as a user would: twnsbench clean.
func cleanOrchestrator(t *testing.T, prefix string) {
	if code, stdout, stderr := runInProcess("clean"); code != exitOK {
		t.Errorf("clean: exit %d\n%s%s", code, stdout, stderr)
	}
	if left := leftoversOf(prefix); len(left) > 0 {
		t.Errorf("left after clean: %v", left)
	}
}

// waitClean waits, within bound, until neither machine keeps anything of
// the run; it returns how long that took.
func waitClean(t *testing.T, lab *remotetest.Lab, prefix string, bound time.Duration) time.Duration {
	t.Helper()
	t0 := time.Now()
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		var kept []string
		for _, m := range lab.Machines {
			if k := machineKeeps(t, lab, m, prefix); k != "" {
				kept = append(kept, m.Name+": "+strings.ReplaceAll(k, "\n", ", "))
			}
		}
		if len(kept) == 0 {
			return time.Since(t0)
		}
		if time.Since(t0) > bound {
			t.Fatalf("after %v the machines keep %v", bound, kept)
		}
		time.Sleep(delay) // polling the machines for a condition
	}
}

// The orchestrator killed mid-run (SIGKILL: no teardown at all): each
// host's copy notices its session end and removes its role, its daemons
// and itself within 30 s, without anyone running clean.
func TestKilledOrchestratorLeavesNothingOnHosts(t *testing.T) {
	nstest.RequireRoot(t)
	lab := remotetest.New(t, 2)
	out := t.TempDir()
	cmd, stderr := runOnLab(t, lab, out)
	waitSamples(t, filepath.Join(out, results.FileName), 2, cmd)
	checkMachinesNoise(t, filepath.Join(out, results.FileName), lab)
	prefix := runPrefix(t, out)
	if k := machineKeeps(t, lab, lab.Machines[1], prefix); k == "" {
		t.Fatal("the server's machine holds nothing of the run mid-run: the test proves nothing")
	}
	cmd.Process.Kill()
	cmd.Wait()
	took := waitClean(t, lab, prefix, 30*time.Second)
	t.Logf("machines clean %.1f s after the orchestrator's SIGKILL", took.Seconds())
	cleanOrchestrator(t, prefix)
	if t.Failed() {
		t.Log(stderr.String())
	}
}

// checkMachinesNoise checks that the samples of a run across the lab's
// two machines recorded each machine's other work, read there by the run's
// agent, and the two together (before, a run across hosts had no noise
// figure at all).
func checkMachinesNoise(t *testing.T, path string, lab *remotetest.Lab) {
	t.Helper()
	doc, err := results.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Samples) == 0 {
		t.Fatal("no samples")
	}
	if n := doc.Samples[0].Noise; n != nil {
		t.Logf("run 1's noise: %.1f %% of both machines' CPUs, each %+v", n.BackgroundPct, n.Machines)
	}
	for _, s := range doc.Samples {
		n := s.Noise
		if n == nil || len(n.Machines) != 2 || n.WindowSec <= 0 {
			t.Errorf("sample %s/%s run %d: noise %+v, want the two machines' and their sum", s.Transport, s.Instrument, s.Run, n)
			continue
		}
		for _, m := range lab.Machines {
			mn, ok := n.Machines["root@"+net.JoinHostPort(m.Addr.String(), "22")]
			// Emulated machines share this kernel: each sees the whole
			// host's other work, so the shares are bounded, not small.
			if !ok || mn.BackgroundPct < -5 || mn.BackgroundPct > 100 {
				t.Errorf("sample run %d: machine %s noise %+v (in %v)", s.Run, m.Addr, mn, n.Machines)
			}
		}
	}
}

// The same with the client on the orchestrator (client=local): its agent,
// this binary over a pipe, sees the pipe close and removes the client's
// role here, as the server's machine removes the server's.
func TestKilledOrchestratorLeavesNothingOfLocalRole(t *testing.T) {
	nstest.RequireRoot(t)
	lab := remotetest.New(t, 2)
	out := t.TempDir()
	cmd, stderr := runOnLabWith(t, lab, out, "client=local,addr=10.226.0.60/24")
	waitSamples(t, filepath.Join(out, results.FileName), 2, cmd)
	prefix := runPrefix(t, out)
	if len(leftoversOf(prefix+"-client")) == 0 {
		t.Fatal("this machine holds nothing of the local client mid-run: the test proves nothing")
	}
	cmd.Process.Kill()
	cmd.Wait()
	killed := time.Now()
	for time.Now().Before(killed.Add(30*time.Second)) && len(leftoversOf(prefix+"-client")) > 0 {
		time.Sleep(200 * time.Millisecond) // polling for a condition
	}
	if left := leftoversOf(prefix + "-client"); len(left) > 0 {
		t.Errorf("30 s after the SIGKILL the local client's role keeps %v", left)
	}
	t.Logf("local role gone %.1f s after the orchestrator's SIGKILL", time.Since(killed).Seconds())
	waitClean(t, lab, prefix, 30*time.Second)
	cleanOrchestrator(t, prefix)
	if t.Failed() {
		t.Log(stderr.String())
	}
}

// The link to the server's machine cut mid-run: the run fails within its
// bounds saying the host was lost, and that machine's copy, hearing
// nothing, removes everything within 30 s.
func TestCutLinkLeavesNothingOnHost(t *testing.T) {
	nstest.RequireRoot(t)
	lab := remotetest.New(t, 2)
	out := t.TempDir()
	cmd, stderr := runOnLab(t, lab, out)
	waitSamples(t, filepath.Join(out, results.FileName), 2, cmd)
	prefix := runPrefix(t, out)
	if len(leftoversOf(prefix+"-server")) == 0 {
		t.Fatal("nothing of the server's role is seen mid-run: the check after the cut would prove nothing")
	}
	lab.Cut(t, 1)
	cut := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the run still going 3 minutes after its server's link was cut\n%s", stderr.String())
	}
	t.Logf("run ended %.1f s after the cut: %s", time.Since(cut).Seconds(), lastLine(stderr.String()))
	if cmd.ProcessState.ExitCode() == 0 {
		t.Errorf("run with a cut link exited 0\n%s", stderr.String())
	}
	if last := lastLine(stderr.String()); !strings.HasPrefix(last, "twnsbench: lost server root@") || !strings.Contains(last, "removes its role by itself") {
		t.Errorf("last line %q: want one line saying which host was lost", last)
	}
	// The cut machine's copy heard nothing: it cleaned up by itself.
	// Its processes and cgroups are seen from here (one kernel).
	deadline := cut.Add(nsbench.AgentIdle + 30*time.Second)
	for time.Now().Before(deadline) && len(leftoversOf(prefix+"-server")) > 0 {
		time.Sleep(200 * time.Millisecond) // polling for a condition
	}
	if left := leftoversOf(prefix + "-server"); len(left) > 0 {
		t.Errorf("the cut machine keeps %v", left)
	}
	lab.Mend(t, 1)
	took := waitClean(t, lab, prefix, 30*time.Second)
	t.Logf("machines clean %.1f s after the cable was back", took.Seconds())
	cleanOrchestrator(t, prefix)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// run --host with bad input is refused (exit 2, one line naming the host)
// before anything exists anywhere: no output directory here, no copy and
// nothing else on the machines.
func TestRunHostsRefusals(t *testing.T) {
	nstest.RequireRoot(t)
	lab := remotetest.New(t, 2)
	m0, m1 := lab.Machines[0].Addr.String(), lab.Machines[1].Addr.String()
	client, server := "client=root@"+m0+",addr=10.226.0.70/24", "server=root@"+m1+",addr=10.226.0.71/24"
	keys := []string{"--identity", lab.Identity, "--known-hosts", lab.KnownHosts, "--connect-timeout", "3s"}
	// A build's program here only (no machine sees this machine's /tmp):
	// its copy is what the client's machine checks.
	notTW := filepath.Join(t.TempDir(), "tw")
	if err := os.WriteFile(notTW, []byte("#!/bin/sh\necho not tw\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := copies(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--host", "client=root@" + m0, "--host", server}, "--host client: add ,addr=A.B.C.D/NN"},
		{[]string{"--host", client}, "--host: name the server's host too"},
		{[]string{"--host", client, "--host", server, "--host", "relay=root@" + m1}, "--host relay: add ,addr=A.B.C.D/NN"},
		// A WAN across hosts drops and delays real packets: the reference's NIC settings.
		{[]string{"--host", client, "--host", server, "--wan", "30:0.1"}, "--nic own: the WAN conditions drop and delay whole packets"},
		// A narrow hop needs the one-host switch.
		{[]string{"--host", client, "--host", server, "--nic", "reference", "--wan", "0ms:0%:mtu=1280"}, "a narrow hop (mtu=) needs the one-host switch: not with --host"},
		// Each host's doctor checks tw at the path the run was given.
		{[]string{"--host", client, "--host", server, "--transports", "tw", "--tw", "/nonexistent/tw"}, "client: root@" + m0 + ":22: --transports: tw cannot run there: tw not found (--tw /nonexistent/tw)"},
		// Builds run across hosts: each build's program is copied to the
		// hosts of the roles that run it and checked there as its copy.
		{[]string{"--host", client, "--host", server, "--transports", "tw@a,tw@b", "--build", "a:tw=" + notTW, "--build", "b:tw=" + notTW},
			"client: root@" + m0 + ":22: --transports: tw@a cannot run there: /var/tmp/" + topology.Prefix},
		// Kernel ESP is what no machine here has: each host's own doctor says so.
		{[]string{"--host", client, "--host", server, "--transports", "ipsec"}, "client: root@" + m0 + ":22: --transports: ipsec cannot run there: "},
		{[]string{"--host", client, "--host", "server=root@" + m1 + ",addr=10.226.0.70/24"}, "addr 10.226.0.70 is client's too"},
		{[]string{"--host", client, "--host", "server=" + remotetest.BenchUser + "@" + m1 + ",addr=10.226.0.71/24"}, "server: bench@" + m1 + ":22: sudo needs a password"},
		{[]string{"--host", client, "--host", "server=root@" + m1 + ",iface=eth7,addr=10.226.0.71/24"}, `server: root@` + m1 + `:22: no interface "eth7"`},
		{[]string{"--host", client, "--host", "server=root@" + m1 + ",addr=192.168.77.5/24"}, "server: root@" + m1 + ":22: addr 192.168.77.5/24 is not on the network of eth0"},
		{[]string{"--host", client, "--host", server, "--known-hosts", lab.KnownHostsWithout(t, 1)}, "server: root@" + m1 + ":22: "},
	} {
		out := filepath.Join(t.TempDir(), "out")
		args := append(append([]string{"run", "--quick", "--transports", "ssh", "--congestion", "host", "--out", out}, keys...), tc.args...)
		code, _, stderr := inOrch(t, lab, args...)
		if code != exitRefused || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v: created the output directory", tc.args)
		}
	}
	if left := copies(t); len(left) > len(before) {
		t.Errorf("copies left: %v", left)
	}
	for _, m := range lab.Machines {
		if k := lab.Exec(t, m, "ls /run/netns 2>/dev/null | grep -F "+lab.Prefix+" || true"); k != "" {
			t.Errorf("%s keeps %q", m.Name, k)
		}
	}
}

// A role on this machine beside a role on another: the client stays here
// (ROLE=local, a namespace on the interface this machine reaches the
// server's host from, its agent this binary over a pipe) and the server
// is on a machine reached over SSH. Both measure through Pure SSH and a
// seed-002 tunnel, each host is recorded, and nothing is left anywhere.
func TestRunLocalBesideHost(t *testing.T) {
	nstest.RequireRoot(t)
	lab := remotetest.New(t, 1)
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := inOrch(t, lab, "run", "--quick", "--runs", "1", "--transports", "ssh,openvpn-static",
		"--instruments", "iperf3-1,tcp_rr,scp", "--congestion", "host", "--out", out,
		"--identity", lab.Identity, "--known-hosts", lab.KnownHosts,
		"--host", "client=local,addr=10.226.0.80/24",
		"--host", "server=root@"+lab.Machines[0].Addr.String()+",addr=10.226.0.81/24")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	doc, err := results.Read(filepath.Join(out, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, s := range doc.Samples {
		got[s.Transport+"/"+s.Instrument]++
	}
	for _, tr := range []string{"ssh", "openvpn-static"} {
		for _, in := range []string{"iperf3-1", "tcp_rr", "scp"} {
			if got[tr+"/"+in] != 1 {
				t.Errorf("%s/%s: %d samples, want 1 (all: %v)", tr, in, got[tr+"/"+in], got)
			}
		}
	}
	logins := map[string]string{}
	for _, h := range doc.Env.Hosts {
		for _, r := range h.Roles {
			logins[r] = h.Login
		}
	}
	if logins["client"] != "local" || !strings.HasPrefix(logins["server"], "root@") {
		t.Errorf("hosts recorded: %v, want the client local and the server on its machine", logins)
	}
	prefix := runPrefix(t, out)
	if k := machineKeeps(t, lab, lab.Machines[0], prefix); k != "" {
		t.Errorf("machine keeps %q", k)
	}
	if left := leftoversOf(prefix); len(left) > 0 {
		t.Errorf("left on this machine: %v", left)
	}
}
