package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/residue"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// The test binary doubles as the twnsbench command: with this variable set
// it runs main's logic instead of the tests, so tests can signal a real
// process.
const asCommandEnv = "TWNSBENCH_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	// A WAN run started in-process re-executes this binary as its
	// userspace impairment's forwarder: serve it, don't test.
	impair.MaybeRunForwarder()
	impair.MaybeRunProbe() // and as the WAN probes
	// A run started in-process re-executes this binary as its userspace
	// WireGuard daemon (`wg-userspace IFNAME`): serve it, don't test.
	// A copy of this binary started on an emulated machine (a host's
	// agent) gets its subcommand and no environment: any first
	// argument that is not a test flag makes it the command.
	if os.Getenv(asCommandEnv) == "1" || len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-test.") {
		ns.MaybeRunHelper()
		os.Exit(run(os.Args, os.Stdout, os.Stderr))
	}
	ns.MaybeRunHelper() // the runs below start children through the launcher
	// Runs another process left before the tests began are not theirs.
	before := nsbench.Leftovers()
	code := m.Run()
	removeQuickRun()
	if left := newLeftovers(before); os.Geteuid() == 0 && len(left) > 0 && code == 0 {
		os.Stderr.WriteString("tests left runs behind: " + strings.Join(left, " ") + "\n")
		code = 99
	}
	os.Exit(code)
}

// newLeftovers lists the runs Leftovers names now that it did not name
// before: what the test itself left (another process's leftovers are
// theirs).
func newLeftovers(before []string) []string { return added(before, nsbench.Leftovers()) }

// command returns the test binary set up to act as `twnsbench args...`.
func command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], withoutDriftProbe(args)...)
	cmd.Env = append(os.Environ(), asCommandEnv+"=1")
	return cmd
}

// runAndRead runs `twnsbench run args... --out DIR` in-process, fails the
// test unless it exits 0, and returns the results document and DIR.
func runAndRead(t *testing.T, args ...string) (*results.Document, string) {
	t.Helper()
	out := t.TempDir()
	code, stdout, stderr := runInProcess(append(append([]string{"run"}, args...), "--out", out)...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	doc, err := results.Read(filepath.Join(out, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return doc, out
}

func runInProcess(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(append([]string{"twnsbench"}, withoutDriftProbe(args)...), &o, &e)
	return code, o.String(), e.String()
}

// withoutDriftProbe adds --drift-probe=false to a `run` whose args do not
// name --drift-probe: the tests that read the host's drift probes ask for
// them (--drift-probe), the others save their 2.5 s a run.
func withoutDriftProbe(args []string) []string {
	if len(args) == 0 || args[0] != "run" || slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--drift-probe") || strings.HasPrefix(a, "-drift-probe")
	}) {
		return args
	}
	return append([]string{"run", "--drift-probe=false"}, args[1:]...)
}

func TestBadInputIsRefusedAndCreatesNothing(t *testing.T) {
	before := nsbench.Leftovers()
	noTW := t.TempDir() // a PATH without tw, caddy or xray
	for _, tc := range []struct {
		args []string
		want string // in the one line
	}{
		{[]string{"run", "--wan", "30xx"}, "--wan"},
		{[]string{"run", "--runs", "0"}, "--runs 0"},
		{[]string{"run", "--size", "-1"}, "--size"},
		{[]string{"run", "--transports", "nope"}, "unknown transport"},
		{[]string{"run", "--duration", "1500ms"}, "--duration"},
		{[]string{"run", "--bogus-flag"}, "bogus-flag"},
		{[]string{"run", "--instruments", "iperf3-1,bogus"}, "bogus"},
		{[]string{"run", "--congestion", "nope"}, "--congestion nope: not available in this kernel (available: "},
		{[]string{"run", "--nic", "fast"}, `--nic "fast": want reference`},
		{[]string{"run", "--nic", "own"}, "--nic own: the WAN conditions drop and delay whole packets"},
		{[]string{"run", "--pin", "spread"}, `--pin "spread": want off, same`},
		{[]string{"run", "--clients", "1", "--pin", "same"}, "--clients: --pin does not apply"},
		// A transport the user named must run: refused before anything exists.
		{[]string{"run", "--transports", "ssh,tw", "--tw", "/etc/passwd"}, "tw cannot run here"},
		{[]string{"run", "--transports", "tw", "--tw", filepath.Join(noTW, "tw")}, "tw not found"},
		// The many-client sweep's list and what it cannot combine with.
		{[]string{"run", "--clients", "1,x"}, `--clients: "x" is not a client count`},
		{[]string{"run", "--clients", "0,2"}, "--clients: 0 is out of range (1 to 64"},
		{[]string{"run", "--clients", "65"}, "--clients: 65 is out of range"},
		{[]string{"run", "--clients", "2,2"}, "--clients: 2 is given twice"},
		{[]string{"run", "--clients", ""}, "--clients: empty list"},
		{[]string{"run", "--clients", "1", "--wan", "50:0"}, "--wan"},
		{[]string{"run", "--clients", "1", "--wan", "30ms:0%:mtu=1280"}, "--clients: --wan 30ms:0%:mtu=1280: a narrow hop (mtu=) does not apply to the many-client sweep"},
		{[]string{"run", "--clients", "1,3", "--host", "client=root@10.0.0.2,addr=10.0.0.50/24", "--host", "server=root@10.0.0.3,addr=10.0.0.52/24"},
			"--host client: 3 clients from addr 10.0.0.50: client3 would be 10.0.0.52, the server's addr"},
		{[]string{"run", "--clients", "1", "--drift-probe"}, "--clients: --drift-probe does not apply to the many-client sweep"},
		{[]string{"run", "--clients", "1", "--runs", "auto"}, `--clients: --runs "auto": want how many times to run the sweep, 1 to 100`},
		{[]string{"run", "--clients", "1", "--runs", "0"}, `--runs "0": want how many times`},
		{[]string{"run", "--clients", "1", "--runs", "101"}, `--runs "101": want how many times`},
		{[]string{"run", "--clients", "1", "--duration", "1500ms"}, "--duration"},
		{[]string{"run", "--clients", "1", "--transports", "ssh-tun"}, "--clients: no many-client form yet for ssh-tun"},
		{[]string{"run", "--clients", "2", "--transports", "openvpn-static"}, "--clients: openvpn-static is point to point"},
	} {
		args := tc.args
		out := filepath.Join(t.TempDir(), "out")
		code, _, stderr := runInProcess(append(args, "--out", out)...)
		if code != exitRefused {
			t.Errorf("%v: exit %d, want %d (stderr %q)", args, code, exitRefused, stderr)
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: stderr %q lacks %q", args, stderr, tc.want)
		}
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "twnsbench: ") {
			t.Errorf("%v: want one line 'twnsbench: …', got %q", args, stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v: created the output directory", args)
		}
	}
	if after := newLeftovers(before); len(after) > 0 {
		t.Errorf("refused runs created %v", after)
	}
	if code, _, stderr := runInProcess("clean", "extra"); code != exitRefused || !strings.Contains(stderr, "unexpected argument") {
		t.Errorf("clean extra: exit %d %q", code, stderr)
	}
	// An output directory that cannot be created is bad input too.
	code, _, stderr := runInProcess("run", "--out", "/proc/twnsbench-out")
	if code != exitRefused || !strings.Contains(stderr, "--out /proc/twnsbench-out") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("--out /proc/…: exit %d, stderr %q; want exit 2 and one line", code, stderr)
	}
	if after := newLeftovers(before); len(after) > 0 {
		t.Errorf("refused runs created %v", after)
	}
}

func TestRunWithBenchEnvKnobs(t *testing.T) {
	t.Setenv("BENCH_RUNS", "0")
	if code, _, stderr := runInProcess("run", "--out", t.TempDir()); code != exitRefused || !strings.Contains(stderr, "--runs 0") {
		t.Errorf("BENCH_RUNS=0: exit %d, %q", code, stderr)
	}
	t.Setenv("BENCH_RUNS", "1")
	t.Setenv("BENCH_SIZE_GB", "-3")
	if code, _, stderr := runInProcess("run", "--out", t.TempDir()); code != exitRefused || !strings.Contains(stderr, "BENCH_SIZE_GB") {
		t.Errorf("BENCH_SIZE_GB=-3: exit %d, %q", code, stderr)
	}
}

func TestDoctor(t *testing.T) {
	nstest.RequireRoot(t)
	code, stdout, stderr := runInProcess("doctor", "--size", "64MiB")
	if code != exitOK {
		t.Fatalf("doctor: exit %d: %s%s", code, stdout, stderr)
	}
	for _, want := range []string{"veth", "cgroup v2", "iperf3", "netperf", "sshd", "tmpfs room"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestQuickSSHRun is the foundation's end-to-end check: real namespaces,
// real sshd, iperf3, netperf and scp.
func TestQuickSSHRun(t *testing.T) {
	doc, out, _ := quickRun(t)
	got := map[string]results.Sample{}
	for _, s := range doc.Samples {
		if s.Transport == "wireguard" {
			continue // TestQuickWireGuardRun reads those
		}
		if s.Transport != "ssh" || s.Condition != "lan" || s.Run != 1 {
			t.Errorf("unexpected sample %+v", s)
		}
		got[s.Instrument] = s
		if s.HostCPUSec <= 0 || s.RoleCPUSec["client"] <= 0 {
			t.Errorf("%s: CPU not measured: host %.2f roles %v", s.Instrument, s.HostCPUSec, s.RoleCPUSec)
		}
		// Every tool with a server-side process charges the server role
		// (ping's echoes are answered by the kernel, in no cgroup).
		if s.Instrument != "ping" && s.RoleCPUSec["server"] <= 0 {
			t.Errorf("%s: server CPU not measured: %v", s.Instrument, s.RoleCPUSec)
		}
		if s.WallSec <= 0 {
			t.Errorf("%s: wall %.3f", s.Instrument, s.WallSec)
		}
	}
	for _, inst := range []string{"iperf3-1", "iperf3-4", "tcp_rr", "scp", "ping", "udp-pps", "rrul", "ready"} {
		if _, ok := got[inst]; !ok {
			t.Errorf("no %s sample", inst)
		}
	}
	// The shared run is asked not to probe the host (--drift-probe=false,
	// by runInProcess): it records so, has no probe, and its report says
	// so (TestInterleavedRunMarksABusyHost reads the probes of a run).
	if c := doc.Config; c == nil || c.DriftProbe == nil || *c.DriftProbe || len(doc.DriftProbes) != 0 {
		t.Errorf("config %+v, drift probes %+v: want drift_probe false and no probe", c, doc.DriftProbes)
	}
	if md, err := os.ReadFile(filepath.Join(out, nsbench.ReportFile)); err != nil || !strings.Contains(string(md), "| Host before and after | not probed (--drift-probe=false) |") {
		t.Errorf("the report does not say the host was not probed (%v)", err)
	}
	if p := got["ping"]; p.Value <= 0 || p.Extra["min_ms"] <= 0 || p.Extra["min_ms"] > p.Value || p.Extra["transmitted"] != 200 {
		t.Errorf("ping: avg %.3f ms, extra %v", p.Value, p.Extra)
	}
	if u := got["udp-pps"]; u.Value <= 0 || u.Extra["sent_pps"] < u.Value || u.Extra["socket_buffer_bytes"] <= 0 {
		t.Errorf("udp-pps: %.0f pps received, extra %v", u.Value, u.Extra)
	}
	if r := got["ready"]; r.Value <= 0 || r.Value > 60 {
		t.Errorf("ready: %.3f s", r.Value)
	}
	if v := got["iperf3-1"].Value; v < 0.1 {
		t.Errorf("iperf3-1 = %.3f Gbit/s, implausibly low", v)
	}
	rr := got["tcp_rr"]
	if rr.P50Us == nil || rr.P99Us == nil || *rr.P50Us <= 0 || *rr.P99Us < *rr.P50Us || rr.Value <= 0 {
		t.Errorf("tcp_rr: value %.0f p50 %v p99 %v", rr.Value, rr.P50Us, rr.P99Us)
	}
	scp := got["scp"]
	if scp.Value <= 1 {
		t.Errorf("scp = %.2f MB/s, want > 1", scp.Value)
	}
	if scp.PayloadBytes == nil || *scp.PayloadBytes != 64<<20 || scp.WireBytes == nil || *scp.WireBytes <= *scp.PayloadBytes {
		t.Errorf("scp payload %v wire %v: want wire > payload = 64 MiB", scp.PayloadBytes, scp.WireBytes)
	}
	// MB/s is timed from the copy's request; the connection is apart and
	// the wall is both.
	connect, transfer := scp.Extra["ssh_connect_sec"], scp.Extra["transfer_sec"]
	t.Logf("scp: ssh_connect_sec %.3f, transfer_sec %.3f, wall %.3f s: %.2f MB/s (%.2f over the whole wall)",
		connect, transfer, scp.WallSec, scp.Value, 64<<20/scp.WallSec/1e6)
	if connect <= 0 || transfer <= 0 || math.Abs(connect+transfer-scp.WallSec) > 1e-6 || math.Abs(scp.Value-64<<20/transfer/1e6) > 1e-6 {
		t.Errorf("scp: connect %v + transfer %v s, wall %v s, %v MB/s: want both > 0, summing to the wall, MB/s = payload / transfer", connect, transfer, scp.WallSec, scp.Value)
	}
	if doc.Env.Congestion != "cubic" || doc.Env.ScpForm == "" || doc.Env.Facts.Get("iperf3") == "" || doc.Env.Kernel == "" {
		t.Errorf("env incomplete: %+v", doc.Env)
	}
	// This machine is recorded as a run across hosts records each host:
	// read by the same host op, its roles' links as built.
	if hs := doc.Env.Hosts; len(hs) != 1 || hs[0].Login != results.LocalLogin || len(hs[0].Roles) != 3 || hs[0].Kernel != doc.Env.Kernel ||
		hs[0].Cores <= 0 || hs[0].Tools["iperf3"] == "" || hs[0].RoleLinks == nil || hs[0].RoleLinks.Congestion != "cubic" ||
		hs[0].RoleLinks.Offloads != doc.Env.Offloads || doc.Env.AcrossHosts() {
		t.Errorf("env.hosts of a run on one host: %+v", hs)
	}
	// The tools' versions are facts, and also where tw's reader looks.
	var raw struct{ Env map[string]any }
	if b, err := os.ReadFile(filepath.Join(out, results.FileName)); err != nil || json.Unmarshal(b, &raw) != nil {
		t.Errorf("results JSON: %v", err)
	}
	for _, k := range []string{"openssh", "iperf3", "netperf"} {
		if v := doc.Env.Facts.Get(k); v == "" || raw.Env[k] != v {
			t.Errorf("env.%s = %v, env.facts has %q: want the version in both", k, raw.Env[k], v)
		}
	}
	if doc.Timings == nil || doc.Timings.TopologyUpSec <= 0 || doc.Timings.TeardownSec <= 0 {
		t.Errorf("timings not recorded: %+v", doc.Timings)
	}
	if len(doc.RSS) == 0 || doc.RSS[0].PeakKB["server / sshd"] <= 0 {
		t.Errorf("baseline RSS missing: %+v", doc.RSS)
	}
	// The many-connections and Responsiveness Test servers run only for an
	// instrument of the app set: a default run's server role holds only
	// the reference's fixtures.
	for _, r := range doc.RSS {
		for k := range r.PeakKB {
			if strings.Contains(k, "many-rr") || strings.Contains(k, "rpm-server") {
				t.Errorf("%s: %s runs in a run without many_rr and rpm", r.Transport, k)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "bench-report.md"))
	if err != nil || !strings.Contains(string(md), "## Results — LAN (0 ms RTT, no loss)") || !strings.Contains(string(md), "| Pure SSH | ") {
		t.Errorf("report: %v\n%s", err, md)
	}
	if want := "| OpenSSH | " + doc.Env.Facts.Get("openssh") + " |\n| iperf3 | " + doc.Env.Facts.Get("iperf3") + " |\n| netperf | "; !strings.Contains(string(md), want) {
		t.Errorf("the Environment lacks the tools' rows %q:\n%s", want, md)
	}
	if left := leftoversOf(runPrefix(t, out)); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// waitSamples polls the results file until it holds n samples.
func waitSamples(t *testing.T, path string, n int, cmd *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for delay := 10 * time.Millisecond; time.Now().Before(deadline); delay = min(2*delay, 200*time.Millisecond) {
		if doc, err := results.Read(path); err == nil && len(doc.Samples) >= n {
			return
		}
		if cmd.ProcessState != nil {
			t.Fatal("the run exited early")
		}
		time.Sleep(delay) // polling a file for a condition, not synchronising on time
	}
	t.Fatalf("no %d samples in %s within 2 minutes", n, path)
}

func TestInterruptKeepsResultsAndLeavesNothing(t *testing.T) {
	nstest.RequireRoot(t)
	out := t.TempDir()
	cmd := command("run", "--transports", "ssh", "--quick", "--runs", "5", "--out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitSamples(t, filepath.Join(out, results.FileName), 1, cmd)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit: %v, want %d\n%s", err, exitInterrupted, stderr.String())
	}
	doc, err := results.Read(filepath.Join(out, results.FileName))
	if err != nil {
		t.Fatalf("results after interrupt: %v", err)
	}
	if len(doc.Samples) < 1 || len(doc.Samples) >= 20 || doc.Interrupted == "" {
		t.Errorf("samples %d, interrupted %q: want the partial run marked interrupted", len(doc.Samples), doc.Interrupted)
	}
	if doc.Complete || !strings.HasPrefix(doc.Incomplete, "interrupted after ") {
		t.Errorf("complete %v, incomplete %q: want an interrupted run marked incomplete", doc.Complete, doc.Incomplete)
	}
	md, _ := os.ReadFile(filepath.Join(out, "bench-report.md"))
	if !strings.Contains(string(md), "Interrupted") {
		t.Error("the report does not say the run was interrupted")
	}
	if left := leftoversOf(runPrefix(t, out)); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestCleanAfterKill(t *testing.T) {
	nstest.RequireRoot(t)
	out := t.TempDir()
	cmd := command("run", "--transports", "ssh", "--quick", "--runs", "5", "--out", out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitSamples(t, filepath.Join(out, results.FileName), 1, cmd)
	cmd.Process.Kill() // no teardown at all
	cmd.Wait()
	prefix := runPrefix(t, out)
	if left := leftoversOf(prefix); len(left) == 0 {
		t.Fatal("a killed run left nothing to clean: the test proves nothing")
	}
	checkPrivateModes(t, prefix)
	code, stdout, stderr := runInProcess("clean")
	if code != exitOK || !strings.Contains(stdout, "removed netns "+prefix) {
		t.Fatalf("clean: exit %d\n%s%s", code, stdout, stderr)
	}
	if left := leftoversOf(prefix); len(left) > 0 {
		t.Errorf("left after clean: %v", left)
	}
	code, stdout, _ = runInProcess("clean")
	if code != exitOK || strings.Contains(stdout, prefix) {
		t.Errorf("second clean: exit %d %q", code, stdout)
	}
	// The results written before the kill are intact, and say that the
	// run did not finish; so does a report rendered from them.
	b, err := os.ReadFile(filepath.Join(out, results.FileName))
	if err != nil || !json.Valid(b) {
		t.Errorf("results after SIGKILL: %v", err)
	}
	doc, err := results.Read(filepath.Join(out, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if doc.IsComplete() || !strings.Contains(doc.IncompleteReason(), "no completion mark") {
		t.Errorf("killed run: complete %v, reason %q", doc.IsComplete(), doc.IncompleteReason())
	}
	if code, _, stderr := runInProcess("report", "--in", filepath.Join(out, results.FileName)); code != exitOK {
		t.Fatalf("report: exit %d %s", code, stderr)
	}
	if md, _ := os.ReadFile(filepath.Join(out, "bench-report.md")); !strings.Contains(string(md), "**Incomplete:** no completion mark") {
		t.Errorf("the report of a killed run does not say it is incomplete:\n%s", md)
	}
	_, _, stderr = runInProcess("compare", "--force", filepath.Join(out, results.FileName), filepath.Join(out, results.FileName))
	if !strings.Contains(stderr, "is an incomplete run (no completion mark") {
		t.Errorf("compare does not warn about the incomplete run: %q", stderr)
	}
}

// TestNoPayloadWithoutScp: without scp no payload is written, so a size
// larger than the machine's memory does not matter, and no condition
// claims a payload.
func TestNoPayloadWithoutScp(t *testing.T) {
	nstest.RequireRoot(t)
	doc, out := runAndRead(t, "--transports", "ssh", "--wan", "off", "--quick", "--instruments", "iperf3-1", "--size", "4TiB")
	if len(doc.Samples) != 1 || doc.Samples[0].Instrument != "iperf3-1" {
		t.Errorf("samples %+v: want one iperf3-1", doc.Samples)
	}
	for _, c := range doc.Conditions {
		if c.ScpPayloadBytes != 0 {
			t.Errorf("condition %s claims a %d-byte payload", c.Name, c.ScpPayloadBytes)
		}
	}
	if !doc.Complete || doc.Incomplete != "" {
		t.Errorf("a finished run: complete %v, incomplete %q", doc.Complete, doc.Incomplete)
	}
	logs, _ := os.ReadFile(filepath.Join(out, "bench-report.md"))
	if strings.Contains(string(logs), "of /dev/urandom") {
		t.Errorf("the report describes a payload that was not written")
	}
}

// runPrefix is the run id of the run that wrote to out (its log directory).
func runPrefix(t *testing.T, out string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(out, "logs", topology.Prefix+"*"))
	if len(m) != 1 {
		t.Fatalf("want one run log directory in %s, got %v", out, m)
	}
	return filepath.Base(m[0])
}

// leftoversOf lists everything one run left, of every kind a run creates
// (package residue: namespaces, links, cgroups, mounts, processes, files).
// A role's scope ("twnsb-3fa9c1-server": what its agent made) narrows it to
// the objects named with the scope.
func leftoversOf(prefix string) []string {
	run := residue.RunOf(prefix)
	var left []string
	for _, o := range residue.Find(run) {
		if prefix == run || strings.Contains(o.What, prefix) {
			left = append(left, o.String())
		}
	}
	return left
}
