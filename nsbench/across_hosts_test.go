package nsbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/twnsbench/twnsbench/nsbench/wan"
)

// labHosts is an inventory putting the client on machine 0 and the server
// on machine 1 of lab, each role at an address of its own on the lab's
// network.
func labHosts(t testing.TB, lab *remotetest.Lab) Hosts {
	return labHostsAt(t, lab, 50, "client", "server")
}

// labHostsAt puts roles on machines 0, 1, … of lab at 10.226.0.first and
// the addresses after it.
func labHostsAt(t testing.TB, lab *remotetest.Lab, first int, roles ...string) Hosts {
	var hs []hosts.Host
	for i, r := range roles {
		h, err := hosts.ParseHost(fmt.Sprintf("%s=root@%s,addr=10.226.0.%d/24", r, lab.Machines[i].Addr, first+i))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	return Hosts{
		Inventory: hosts.Inventory{Hosts: hs, Identity: lab.Identity, KnownHosts: lab.KnownHosts},
		SSH:       remote.Config{Identity: lab.Identity, KnownHosts: lab.KnownHosts, Dial: lab.Dial, KeepaliveInterval: time.Second},
	}
}

// runAcross runs o (transports built with opts) with instruments, on its
// hosts or on this one, failing t if the run fails.
func runAcross(t *testing.T, o Options, opts map[string]string, instruments []string) *Result {
	t.Helper()
	o.DriftProbe = false // no test across hosts reads the host's drift probes
	plan, err := NewPlan(o, transport.Names())
	if err != nil {
		t.Fatal(err)
	}
	ts, err := transport.Build(o.Transports, opts)
	if err != nil {
		t.Fatal(err)
	}
	ins, _, err := instrument.Select(instruments)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	res, err := Run(context.Background(), plan, Deps{Transports: ts, Instruments: ins, Logf: t.Logf, Recipe: transport.Recipe{Values: opts}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("run on %d hosts (0: this one): %.1f s", len(o.Hosts.Inventory.Hosts), time.Since(t0).Seconds())
	return res
}

// checkOneSampleEach fails t unless res holds one sample of every
// transport × instrument, and no failure or skip.
func checkOneSampleEach(t *testing.T, res *Result, transports, instruments []string) {
	t.Helper()
	got := map[string]int{}
	for _, s := range res.Doc.Samples {
		if s.Instrument != instrument.Ready {
			got[s.Transport+"/"+s.Instrument]++
		}
	}
	for _, tr := range transports {
		for _, in := range instruments {
			if got[tr+"/"+in] != 1 {
				t.Errorf("%s/%s: %d samples, want 1 (all: %v)", tr, in, got[tr+"/"+in], got)
			}
		}
	}
	for _, f := range res.Doc.Failures {
		t.Errorf("failure: %+v", f)
	}
	for _, s := range res.Doc.Skipped {
		t.Errorf("skipped: %+v", s)
	}
}

// checkNothingLeft fails t if any machine of lab, or this host, keeps
// anything of run prefix.
func checkNothingLeft(t *testing.T, lab *remotetest.Lab, prefix string) {
	t.Helper()
	for _, m := range lab.Machines {
		if out := lab.Exec(t, m, "ls /run/netns /var/tmp /tmp | grep "+prefix+"; grep "+prefix+" /proc/mounts; true"); out != "" {
			t.Errorf("%s keeps %q", m.Name, out)
		}
	}
	if left := nstest.Residue(prefix); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// A run with the client and the server on two machines reached over SSH,
// Pure SSH, WireGuard and a seed-002 tunnel (OpenVPN) with every
// instrument: the same rows and samples as on one host, each role's CPU
// and its processes' peak memory read on its machine, and nothing left on
// either machine afterwards. Each machine has a /tmp of its own, so every
// file a role reads (keys, configurations, the payload) reached it through
// the role.
func TestRunAcrossHosts(t *testing.T) {
	nstest.RequireRoot(t)
	if testing.Short() {
		t.Skip("integration test (skipped by -short)")
	}
	lab := remotetest.New(t, 2)
	o := Quick()
	o.Transports = []string{"ssh", "wireguard-go", "openvpn-static"}
	o.Runs, o.Duration, o.Warmup, o.WAN = 1, time.Second, 0, []string{"off"}
	o.Congestion = "host" // a machine's namespace cannot extend the host's allowed list
	o.OutDir = t.TempDir()
	o.Hosts = labHosts(t, lab)
	instruments := []string{"iperf3-1", "iperf3-4", "tcp_rr", "scp", "ping", "udp-pps", "rrul"}
	res := runAcross(t, o, nil, instruments)
	checkOneSampleEach(t, res, o.Transports, instruments)
	// Across hosts the interfaces measure as they are (--nic's default).
	if c := res.Doc.Config; c == nil || c.NIC != NICOwn || !strings.HasPrefix(res.Doc.Env.Offloads, "the interfaces' own settings") {
		t.Errorf("config %+v, offloads %q: want --nic own, recorded", c, res.Doc.Env.Offloads)
	}
	for _, s := range res.Doc.Samples {
		if s.Instrument == "iperf3-1" && (s.RoleCPUSec["client"] <= 0 || s.RoleCPUSec["server"] <= 0) {
			t.Errorf("%s iperf3-1: role CPU %v, want both roles' above 0", s.Transport, s.RoleCPUSec)
		}
		// The host figure is the machines' busy CPU together, read by
		// their agents: at least the roles' own.
		if s.Instrument == "iperf3-1" && s.HostCPUSec < s.RoleCPUSec["client"]+s.RoleCPUSec["server"] {
			t.Errorf("%s iperf3-1: host CPU %.2f s under the roles' %v", s.Transport, s.HostCPUSec, s.RoleCPUSec)
		}
	}
	peaks := map[string]map[string]int64{}
	for _, r := range res.Doc.RSS {
		peaks[r.Transport] = r.PeakKB
	}
	for tr, key := range map[string]string{"ssh": "server / sshd", "wireguard-go": "server / wireguard-go", "openvpn-static": "client / openvpn"} {
		if peaks[tr][key] <= 0 {
			t.Errorf("%s: peak RSS of %q is %d, want it read on its machine (all: %v)", tr, key, peaks[tr][key], peaks[tr])
		}
	}
	// The roles' logs came back from their machines before the roles went.
	for _, name := range []string{"server-sshd.log", "client-openvpn-static.log", "server-wireguard-go.log"} {
		if _, err := os.Stat(filepath.Join(o.OutDir, "logs", res.Prefix, name)); err != nil {
			t.Errorf("log not fetched from its machine: %v", err)
		}
	}
	// Each machine states its own facts, under the login and role it held.
	if hs := res.Doc.Env.Hosts; len(hs) != len(o.Hosts.Inventory.Hosts) {
		t.Errorf("env.hosts: %+v, want one per role", hs)
	}
	for i, h := range res.Doc.Env.Hosts {
		want := o.Hosts.Inventory.Hosts[i]
		if !slices.Equal(h.Roles, []string{want.Role}) || h.Login != want.Dest() || h.Kernel == "" || h.Cores <= 0 || h.MTU <= 0 ||
			h.Iface != remotetest.Iface || h.Driver != "veth" || h.SpeedMbps != 0 { // a veth has no speed of its own
			t.Errorf("host %d: %+v", i, h)
		}
	}
	checkNothingLeft(t, lab, res.Prefix)
}

// Two runs at once on the same two machines, whose copies share one
// filesystem: neither collides with the other, both measure, and nothing
// of either is left. The second has a WAN (--wan 30ms:1%, --impairment
// auto): each role's egress impaired on its own machine, by the
// forwarder since this kernel has no netem, its RTT and loss verified end
// to end and the RTT seen by TCP_RR.
func TestTwoRunsOnSameHosts(t *testing.T) {
	nstest.RequireRoot(t)
	if testing.Short() {
		t.Skip("integration test (skipped by -short)")
	}
	lab := remotetest.New(t, 2)
	// Run 0 also names a wireguard-go program that exists here but on
	// neither machine (each has a /tmp of its own): checked where it would
	// run, the row is skipped with the machines' reason, not started there.
	hereOnly := filepath.Join(t.TempDir(), "wireguard-go")
	if err := os.WriteFile(hereOnly, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	res := make([]*Result, 2)
	errs := make([]error, 2)
	for i := range res {
		o := Quick()
		o.Transports = []string{"ssh"}
		recipe := transport.Recipe{}
		if i == 0 {
			o.Transports = append(o.Transports, "wireguard-go")
			recipe.Values = map[string]string{"wireguard-go": hereOnly}
		}
		o.Runs, o.Duration, o.Warmup, o.WAN = 1, time.Second, 0, []string{"off"}
		o.DriftProbe = false
		o.Congestion = "host"
		o.OutDir = t.TempDir()
		o.Hosts = labHostsAt(t, lab, 60+2*i, "client", "server")
		if i == 1 {
			seed := uint64(42) // the same drop positions every time
			o.WAN, o.Network.NIC, o.Seed = []string{"30ms:1%"}, NICReference, &seed
			// netperf's timer runs from before its data connection: a
			// lost SYN or SYN-ACK (1 % each way) waits the 1 s initial
			// retransmission timeout, which left a 1 s TCP_RR with no
			// transaction (an honest reading, recorded as a failure, but
			// not this test's subject). 2 s keep a second of exchanges.
			o.Duration = 2 * time.Second
		}
		plan, err := NewPlan(o, transport.Names())
		if err != nil {
			t.Fatal(err)
		}
		ts, err := transport.Build(o.Transports, recipe.Values)
		if err != nil {
			t.Fatal(err)
		}
		ins, _, _ := instrument.Select([]string{"iperf3-1", "tcp_rr"})
		wg.Go(func() {
			res[i], errs[i] = Run(context.Background(), plan, Deps{Transports: ts, Instruments: ins, Logf: t.Logf, Recipe: recipe})
		})
	}
	wg.Wait()
	for i := range res {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		if n := len(res[i].Doc.Samples); n < 2 || len(res[i].Doc.Failures) > 0 {
			t.Errorf("run %d: %d samples, failures %+v", i, n, res[i].Doc.Failures)
		}
	}
	if sk := res[0].Doc.Skipped; len(sk) != 1 || sk[0].Transport != "wireguard-go" ||
		!strings.Contains(sk[0].Reason, "on the client's host") || !strings.Contains(sk[0].Reason, "on the server's host") || !strings.Contains(sk[0].Reason, hereOnly) {
		t.Errorf("run 0 skipped %+v; want wireguard-go, unavailable on both machines for want of %s", sk, hereOnly)
	}
	if res[0].Prefix == res[1].Prefix {
		t.Fatalf("both runs are %s", res[0].Prefix)
	}
	checkWANAcross(t, res[1].Doc, forwarderAcross)
	for _, r := range res {
		checkNothingLeft(t, lab, r.Prefix)
	}
}

// The WAN across hosts through netem, where the machines' kernel has
// sch_netem: the stock-kernel VM runs it (scripts/vmtest, check go_netem);
// this host's kernel has none, and TestTwoRunsOnSameHosts proves the
// forwarders instead. --impairment auto asks each role's host, and netem
// goes on each role's eth0 egress there: no forwarder, no fallback, the
// counters of both qdiscs read on their hosts, RTT and loss verified end
// to end. The RTT bounds are emulation's (as check_netem's): under TCG
// netem's timers fire late, so at least the asked RTT less 1 ms and at
// most twice it; the harness's own ±1 ms verdict is logged, not demanded.
// So is the loss: the probe measured 0.995 % of 1 % in one run and 2.5 %
// in another on a busy host (cause not found; no socket overflowed), so
// it must lie within 0.5–3 %.
func TestWANAcrossHostsNetem(t *testing.T) {
	nstest.RequireRoot(t)
	if testing.Short() {
		t.Skip("integration test (skipped by -short)")
	}
	if ok, how := preflight.KernelFeature("netem"); !ok {
		t.Skipf("this kernel has no netem (%s); the stock-kernel VM runs this test (scripts/vmtest, check go_netem)", how)
	}
	lab := remotetest.New(t, 2)
	o := Quick()
	o.Transports = []string{"ssh"}
	seed := uint64(42)
	// 2 s samples: at 1 % loss each way a lost SYN waits TCP's 1 s
	// initial retransmission timeout, which would leave a 1 s TCP_RR
	// without an answer (as TestTwoRunsOnSameHosts found).
	o.Runs, o.Duration, o.Warmup, o.WAN, o.Network.NIC, o.Seed = 1, 2*time.Second, 0, []string{"30ms:1%"}, NICReference, &seed
	o.Congestion = "host"
	o.OutDir = t.TempDir()
	o.Hosts = labHosts(t, lab)
	drops := backlogDrops(t)
	res := runAcross(t, o, nil, []string{"tcp_rr"})
	// Datagrams the kernel's input backlog dropped (all namespaces) would
	// count as the path's loss: logged to tell emulation's from netem's.
	t.Logf("input backlog drops during the run: %d", backlogDrops(t)-drops)
	for _, f := range res.Doc.Failures {
		t.Errorf("failure: %+v", f)
	}
	checkWANAcross(t, res.Doc, wanAcross{method: impair.MethodNetem, rttMs: [2]float64{29, 60}, rrUs: [2]float64{29000, 60000}, lossPct: [2]float64{0.5, 3}})
	// Each role's qdisc, read back on its host over the cell.
	for _, where := range []string{"netem on client eth0", "netem on server eth0"} {
		i := slices.IndexFunc(res.Doc.Diagnostics, func(d results.Diagnostic) bool { return strings.HasPrefix(d.Output, where) })
		if i < 0 {
			t.Errorf("no diagnostic %q: %+v", where, res.Doc.Diagnostics)
			continue
		}
		t.Logf("%s", res.Doc.Diagnostics[i].Output)
	}
	checkNothingLeft(t, lab, res.Prefix)
}

// backlogDrops is the packets the kernel's per-CPU input backlogs have
// dropped since boot (/proc/net/softnet_stat, second column, hex).
func backlogDrops(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/net/softnet_stat")
	if err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			t.Fatalf("softnet_stat line %q", line)
		}
		n, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil {
			t.Fatalf("softnet_stat line %q: %v", line, err)
		}
		sum += n
	}
	return sum
}

// BenchmarkHostsOverhead runs the same run on one host and across two
// emulated machines and reports the second's wall time over the first's
// (overhead-%: the copy of the binary, the SSH set-up and every op over
// the wire), the iperf3-1 medians' ratio across/local, and the local
// runs' own spread (max/min of its samples, as a ratio) to judge that
// ratio by.
//
//	go test -run XXX -bench HostsOverhead -benchtime 1x ./nsbench/
func BenchmarkHostsOverhead(b *testing.B) {
	nstest.RequireRoot(b)
	o := Quick()
	o.Transports = []string{"ssh"}
	o.Runs, o.Duration, o.Warmup, o.WAN = 5, 5*time.Second, time.Second, []string{"off"}
	o.Congestion = "host"
	run := func(o Options) (time.Duration, []float64) {
		o.OutDir = b.TempDir()
		plan, err := NewPlan(o, transport.Names())
		if err != nil {
			b.Fatal(err)
		}
		ts, _ := transport.Build(o.Transports, nil)
		ins, _, _ := instrument.Select([]string{"iperf3-1"})
		t0 := time.Now()
		res, err := Run(context.Background(), plan, Deps{Transports: ts, Instruments: ins, Logf: func(string, ...any) {}})
		if err != nil {
			b.Fatal(err)
		}
		wall := time.Since(t0)
		var gbps []float64
		for _, s := range res.Doc.Samples {
			if s.Instrument == "iperf3-1" {
				gbps = append(gbps, s.Value)
			}
		}
		return wall, gbps
	}
	for range b.N {
		localWall, local := run(o)
		lab := remotetest.New(b, 2)
		o.Hosts = labHosts(b, lab)
		hostsWall, across := run(o)
		o.Hosts = Hosts{}
		b.ReportMetric(100*(hostsWall.Seconds()/localWall.Seconds()-1), "overhead-%")
		b.ReportMetric(median(across)/median(local), "iperf3-ratio")
		b.ReportMetric(slices.Max(local)/slices.Min(local), "local-max/min")
		b.Logf("one host %.1f s, iperf3-1 %.3f Gbit/s (runs %.3f–%.3f); across hosts %.1f s, %.3f Gbit/s (runs %.3f–%.3f)",
			localWall.Seconds(), median(local), slices.Min(local), slices.Max(local),
			hostsWall.Seconds(), median(across), slices.Min(across), slices.Max(across))
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	slices.Sort(s)
	return s[len(s)/2]
}

// wanAcross is what a WAN run across hosts, --wan 30ms:1%, must show:
// the method each role's host impaired with, and the bounds of the
// verification's RTT (ms) and of TCP_RR's p50 (µs), [low, high].
type wanAcross struct {
	method string
	rttMs  [2]float64
	rrUs   [2]float64
	// verdict: the harness's own verdict must hold (the RTT within 1 ms,
	// the loss probe's interval holding 1 %). Without it, under
	// emulation, the probe's loss need only lie within lossPct: the
	// impairment really drops, and not wildly more (check_netem's rule).
	verdict bool
	lossPct [2]float64
}

// forwarderAcross is the userspace impairment on this host, which has no
// netem: a forwarder on each machine, both emulated machines and their
// runs on this 2-vCPU host. The RTT from 1 ms under the configured 30 ms
// to 4 ms over it: each forwarder's scheduling adds to the median
// (+3.23 ms seen in CI with two runs on the machines at once), which the
// harness's ±1 ms verdict reports as off, as it should. The loss within
// 0.7–1.3 % of 30,000 probe datagrams (the configured 1 % at over 5σ).
var forwarderAcross = wanAcross{method: impair.MethodUserspace, rttMs: [2]float64{29, 34}, rrUs: [2]float64{29000, 36000}, lossPct: [2]float64{0.7, 1.3}}

// checkWANAcross fails t unless doc's WAN, --wan 30ms:1% across hosts,
// was made by want.method on the roles' hosts: the forwarders (this
// kernel has no netem), their CPU recorded and netem's refusal named, or
// netem on each role's eth0 with no forwarder and no fallback; verified
// end to end (the RTT within want's bounds; the loss probe's interval
// holding 1 %) and seen by TCP_RR.
func checkWANAcross(t *testing.T, d *results.Document, want wanAcross) {
	t.Helper()
	if d.Env.ImpairmentMethod != want.method {
		t.Errorf("env: method %q, want %q (impairment %q, fallbacks %q)", d.Env.ImpairmentMethod, want.method, d.Env.Impairment, d.Env.Fallbacks)
	}
	if !strings.Contains(d.Env.Topology, "behind an edge") {
		t.Errorf("env.topology %q: want the roles' edges named", d.Env.Topology)
	}
	// --impairment auto asked the hosts' kernels for netem first, and
	// says why it fell back, or did not fall back.
	fellBack := slices.ContainsFunc(d.Env.Fallbacks, func(f string) bool { return strings.HasPrefix(f, "wan: the userspace impairment instead of netem") })
	forwarder := want.method == impair.MethodUserspace
	if fellBack != forwarder || forwarder != strings.Contains(d.Env.Impairment, "roles' own hosts") {
		t.Errorf("impairment %q, fallbacks %q: want the forwarders named (and netem's refusal) only for the userspace method", d.Env.Impairment, d.Env.Fallbacks)
	}
	var rr *results.Sample
	for i, s := range d.Samples {
		if s.Condition != "wan" || s.Instrument == instrument.Ready {
			continue
		}
		if s.Instrument == "tcp_rr" {
			rr = &d.Samples[i]
		}
		if cpu, ok := s.RoleCPUSec[wan.ImpairCgroup]; forwarder && cpu <= 0 || !forwarder && ok {
			t.Errorf("wan %s: forwarder CPU %v (%v), want it only with the forwarders", s.Instrument, cpu, s.RoleCPUSec)
		}
	}
	if rr == nil || rr.P50Us == nil {
		t.Fatalf("no WAN TCP_RR sample with a p50 (failures: %+v)", d.Failures)
	}
	t.Logf("WAN across hosts (%s): TCP_RR p50 %.0f µs", d.Env.ImpairmentMethod, *rr.P50Us)
	if *rr.P50Us < want.rrUs[0] || *rr.P50Us > want.rrUs[1] {
		t.Errorf("WAN TCP_RR p50 = %.0f µs, want %.0f–%.0f", *rr.P50Us, want.rrUs[0], want.rrUs[1])
	}
	if len(d.Verification) != 1 {
		t.Fatalf("verification: %+v", d.Verification)
	}
	v := d.Verification[0]
	t.Logf("verification (%s): RTT %v ms over %d packets, loss %v %% (%v–%v %%, %d datagrams, counters %v %%), ok %v %s",
		v.Method, deref(v.MeasuredRTTMs), v.Packets, deref(v.MeasuredLossPct), deref(v.LossLowPct), deref(v.LossHighPct),
		v.LossProbeDatagrams, deref(v.CounterLossPct), v.OK, v.Note)
	verified, chance := nstest.WANVerified(v)
	if chance != "" {
		t.Log(chance)
	}
	if v.Method != want.method || v.MeasuredRTTMs == nil || *v.MeasuredRTTMs < want.rttMs[0] || *v.MeasuredRTTMs > want.rttMs[1] ||
		v.Packets == 0 || want.verdict && !verified {
		t.Errorf("verification %+v: want %s, the RTT within %v ms (harness verdict demanded: %v)", v, want.method, want.rttMs, want.verdict)
	}
	held, _ := nstest.LossHolds(v) // the configured 1 %
	if !want.verdict {
		held = v.MeasuredLossPct != nil && *v.MeasuredLossPct >= want.lossPct[0] && *v.MeasuredLossPct <= want.lossPct[1]
	}
	if v.LossFallback != "" || v.LossProbeDatagrams < 30000 || !held || v.CounterLossPct == nil {
		t.Errorf("verification's loss is not the end-to-end count holding 1 %% (or within %v %% under emulation): %d datagrams, %v %% (%v–%v %%), counters %v %%, fallback %q",
			want.lossPct, v.LossProbeDatagrams, deref(v.MeasuredLossPct), deref(v.LossLowPct), deref(v.LossHighPct), deref(v.CounterLossPct), v.LossFallback)
	}
}
