package impair

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// probeBed is the reference topology for one test, its roles, and the
// probes' processes (the listener in the server, the sender in the
// client).
type probeBed struct {
	topo   *topology.Topology
	roles  map[string]*role.Role
	client *role.Role
	probe  *Probe
}

// upProbe builds a probeBed.
func upProbe(t *testing.T) *probeBed {
	t.Helper()
	topo, _, roles := nstest.Roles(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := StartProbe(ctx, roles[topology.Client], roles[topology.Server], "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("probe: %v", err)
		}
	})
	return &probeBed{topo: topo, roles: roles, client: roles[topology.Client], probe: p}
}

// rtPrio is the forwarder's priority in the tests: a run's, unless
// TWNSB_RT_PRIO says otherwise (0 for none) for an experiment.
var rtPrio = func() int {
	if v, err := strconv.Atoi(os.Getenv("TWNSB_RT_PRIO")); err == nil {
		return v
	}
	return DefaultRTPriority
}()

func newTestUserspace(t *testing.T, topo *topology.Topology) *Userspace {
	dir := t.TempDir()
	u := NewUserspace(UserspaceConfig{
		RTPriority: rtPrio,
		Switch:     topo.Switch,
		Ports:      []Port{{"client", "client", true}, {"relay", "relay", false}, {"server", "server", true}},
		Control:    filepath.Join(dir, "impair.sock"),
	})
	u.cfg.Process.Name = "switch/impair-forwarder"
	u.cfg.Process.NetNS = topo.Switch.Path()
	u.cfg.Process.Log = filepath.Join(dir, "forwarder.log")
	t.Cleanup(func() {
		if err := u.Clear(context.Background()); err != nil {
			t.Errorf("clear: %v", err)
		}
		if t.Failed() {
			b, _ := os.ReadFile(u.cfg.Process.Log)
			t.Logf("forwarder log:\n%s", b)
		}
	})
	return u
}

// bridgePorts lists the switch ports attached to br0.
func bridgePorts(t *testing.T, topo *topology.Topology) []string {
	t.Helper()
	h, err := topo.Switch.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	br, err := h.LinkByName("br0")
	if err != nil {
		t.Fatal(err)
	}
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var on []string
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			on = append(on, l.Attrs().Name)
		}
	}
	return on
}

func TestUserspaceSetProbeClear(t *testing.T) {
	b := upProbe(t)
	topo, addr := b.topo, b.probe.Addr()
	ctx := context.Background()
	client := b.client

	base, err := ProbeRTT(ctx, client, addr, 10)
	if err != nil {
		t.Fatal(err)
	}
	u := newTestUserspace(t, topo)
	c := Condition{RTT: 30 * time.Millisecond, LossPct: 0.1, Seed: 42}
	applied, err := u.Set(ctx, c)
	if err != nil {
		t.Fatalf("set: %v", err)
	}
	if len(applied) != 2 || applied[0].Role != "client" || applied[1].Role != "server" || *applied[0].Seed != 42 {
		t.Fatalf("applied %+v", applied)
	}
	if on := bridgePorts(t, topo); len(on) != 0 {
		t.Errorf("ports still on the bridge while impaired: %v", on)
	}
	before, err := u.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rtt, err := ProbeRTT(ctx, client, addr, ProbeCount)
	if err != nil {
		t.Fatal(err)
	}
	after, err := u.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cell := SubAll(after, before)
	v := Judge(c, rtt, EndToEnd{}, nil, cell)
	t.Logf("base RTT %s; impaired RTT median %s (min %s, max %s); verdict %+v", base.Median, rtt.Median, rtt.Min, rtt.Max, v)
	// The delay is the forwarder's: no probe is quicker than the
	// configured RTT, and the quickest is within 1 ms of it. The median
	// also carries the host's scheduling of the probe, the forwarder and
	// the echo (+1.04 ms seen once on this 2-vCPU kind of host, where the
	// harness's ±1 ms verdict then says "off", as it should in a report):
	// the test holds it within 3 ms.
	if rtt.Min < c.RTT || rtt.Min > c.RTT+time.Millisecond || rtt.Median > c.RTT+3*time.Millisecond {
		t.Errorf("RTT min %s, median %s: want the quickest within 30–31 ms and the median within 33 ms", rtt.Min, rtt.Median)
	}
	for _, d := range cell {
		// Each connect: SYN and ACK/FIN from the client, SYN-ACK etc. from
		// the server; at least the SYNs must have been counted.
		if d.Offered() < ProbeCount {
			t.Errorf("%s: %d packets counted for %d connects", d.Where, d.Offered(), ProbeCount)
		}
		t.Logf("%s", d.Text(MethodUserspace, nil))
	}

	// Set again (idempotent): still impaired, counters restart.
	if _, err := u.Set(ctx, c); err != nil {
		t.Fatalf("second set: %v", err)
	}
	if cs, err := u.Counters(ctx); err != nil || cs[0].Sent > 10 {
		t.Errorf("after a second Set: %+v, %v", cs, err)
	}
	if err := u.Clear(ctx); err != nil {
		t.Fatalf("clear: %v", err)
	}
	if err := u.Clear(ctx); err != nil {
		t.Fatalf("second clear: %v", err)
	}
	if on := bridgePorts(t, topo); strings.Join(on, ",") != "client,relay,server" {
		t.Errorf("bridge ports after clear: %v, want client,relay,server", on)
	}
	if _, err := os.Stat(u.cfg.Control); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control socket left behind: %v", err)
	}
	back, err := ProbeRTT(ctx, client, addr, 10)
	if err != nil {
		t.Fatalf("after clear: %v", err)
	}
	if back.Median > 5*time.Millisecond {
		t.Errorf("RTT after clear %s: the bridge is not back", back.Median)
	}
}

// TestLossProbeEndToEnd: the loss the verification reports is what the
// probe's datagrams met. On the plain bridge none is lost; through the
// userspace impairment at 1 % each way the count is exact: every datagram
// lost is one of the forwarder's loss draws over the probe, and 32 000
// datagrams measure 1 % within their 99.7 % interval (0.86–1.17 %).
func TestLossProbeEndToEnd(t *testing.T) {
	testLossProbe(t, 0)
}

// TestLossProbeUnderLoad: the same beside CPU hogs, one more than the
// host has cores, as a CI runner or a laptop running other tests is: the
// verdict on a correct condition still holds, by the datagrams' count or,
// named, by the forwarder's loss draws.
func TestLossProbeUnderLoad(t *testing.T) {
	testLossProbe(t, runtime.NumCPU()+1)
}

func testLossProbe(t *testing.T, hogs int) {
	b := upProbe(t)
	topo, ln := b.topo, b.probe
	ctx := context.Background()
	lp := LossProbe{Count: LossProbeRate * int(LossProbeDuration/time.Second), Rate: LossProbeRate}
	startHogs(t, hogs)

	start := time.Now()
	plain, err := ln.ProbeLoss(ctx, lp, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bridge: %+v in %s", plain, time.Since(start))
	if why := plain.Unusable(); why != "" {
		t.Logf("bridge: not usable: %s", why)
	} else if plain.Sent != uint64(lp.Count) || plain.Lost() != 0 || plain.Echoed != plain.Arrived {
		t.Errorf("bridge: %+v, want %d sent and none lost", plain, lp.Count)
	}

	u := newTestUserspace(t, topo)
	c := Condition{RTT: 20 * time.Millisecond, LossPct: 1, Seed: 7}
	if _, err := u.Set(ctx, c); err != nil {
		t.Fatal(err)
	}
	before, err := u.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	e, err := ln.ProbeLoss(ctx, lp, c.RTT)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	after, err := u.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	during := SubAll(after, before)
	lo, hi := e.LossInterval()
	t.Logf("1 %% each way: %+v: %.3f %% (%.3f–%.3f %%) of %d in %s; forwarder %+v", e, e.LossPct(), lo, hi, e.Offered(), took, during)
	if e.Sent != uint64(lp.Count) || e.SendErrors != 0 {
		t.Errorf("sent %d (%d refused), want %d", e.Sent, e.SendErrors, lp.Count)
	}
	// The probe's own wall time: its duration, then half a round trip and
	// the settling margin before each count closes; within the 5 s (plus
	// the round trip) a WAN cell may spend on it, under load too.
	if bound := 5*time.Second + c.RTT; took > bound {
		t.Errorf("the probe took %s, beyond %s", took, bound)
	}
	v := Judge(c, RTT{Median: c.RTT, N: 1}, e, during, nil)
	if !v.LossOK || !v.LossJudged {
		t.Errorf("a correct 1 %% condition not verified: %s", v.Note)
	}
	draws, drawn, astray := lossDraws(during)
	if why := e.Unusable(); why != "" || astray > 0 {
		t.Logf("end-to-end count not usable (%s; %d frames lost astray): judged by the counters, %s", why, astray, v.Note)
		if v.LossFallback == "" || !strings.Contains(v.Note, "loss judged by the impairment's loss-drop counters over the probe") {
			t.Errorf("fallback not named: %+v", v)
		}
		return
	}
	if v.LossFallback != "" {
		t.Errorf("usable count, yet a fallback: %s", v.LossFallback)
	}
	// Exact: the datagrams lost are the forwarder's loss draws, give or
	// take the few other frames (ARP) that crossed it meanwhile.
	if extra := drawn - e.Offered(); e.Lost() > draws || draws-e.Lost() > extra {
		t.Errorf("datagrams lost %d, the forwarder's loss draws %d (of %d frames, %d not the probe's)", e.Lost(), draws, drawn, extra)
	}
	if c.LossPct < lo || c.LossPct > hi || hi-lo > 0.35 {
		t.Errorf("loss %.3f %% end to end, interval %.3f–%.3f %%: want it to hold 1 %% within ±0.18", e.LossPct(), lo, hi)
	}
}

// startHogs runs n busy loops (sh) until the test ends, each ended by its
// PID (timeout passes the SIGTERM on), and after two minutes at most
// should the test binary die first.
func startHogs(t *testing.T, n int) {
	for range n {
		cmd := exec.Command("timeout", "120", "sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("CPU hog: %v", err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		})
	}
}

// slowRTT is how much a probe's median may trail the configured RTT on a
// busy host (the CPU the probes and the forwarder wait for).
const slowRTT = 3 * time.Millisecond

// TestUserspaceStates walks conditions in random order, as the run does
// (LAN → WAN → LAN …), and checks each is in force.
func TestUserspaceStates(t *testing.T) {
	b := upProbe(t)
	topo, addr := b.topo, b.probe.Addr()
	ctx := context.Background()
	client := b.client
	u := newTestUserspace(t, topo)
	states := []*Condition{nil, {RTT: 10 * time.Millisecond}, {RTT: 40 * time.Millisecond, LossPct: 1}, {RTT: 0}}
	order := append(rand.Perm(len(states)), rand.Perm(len(states))...)
	for _, i := range order {
		want := time.Duration(0)
		if s := states[i]; s == nil {
			if err := u.Clear(ctx); err != nil {
				t.Fatalf("clear: %v", err)
			}
		} else {
			if _, err := u.Set(ctx, *s); err != nil {
				t.Fatalf("set %v: %v", s, err)
			}
			want = s.RTT
		}
		rtt, err := ProbeRTT(ctx, client, addr, 7)
		if err != nil {
			t.Fatal(err)
		}
		// The states lie 10 ms and more apart: the median tells which is
		// in force, within the harness's tolerance on the quick side and
		// slowRTT on the slow one (on a busy host it trails: 11.2 ms for
		// 10 ms seen in CI).
		if rtt.Median < want-RTTTolerance || rtt.Median > want+slowRTT {
			t.Errorf("state %d: RTT median %s, want %s (at most %s quicker, %s slower)", i, rtt.Median, want, RTTTolerance, slowRTT)
		}
	}
}

// TestNetemRefusedWithoutSchNetem: where the kernel has no sch_netem, Set
// says so with ErrUnsupported (what crosses back from the role's op is a
// flag, not the error's type), and Clear finds nothing to remove.
func TestNetemRefusedWithoutSchNetem(t *testing.T) {
	nstest.RequireRoot(t)
	if ok, _ := preflight.KernelFeature("netem"); ok {
		t.Skip("this kernel has netem: TestNetem covers it")
	}
	_, _, roles := nstest.Roles(t, t.TempDir())
	n := NewNetem([]Target{{Role: roles[topology.Client], Link: topology.RoleLink}})
	ctx := context.Background()
	_, err := n.Set(ctx, Condition{RTT: 30 * time.Millisecond, LossPct: 0.1})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "netem on client eth0") {
		t.Errorf("set without sch_netem: %v, want ErrUnsupported naming client eth0", err)
	}
	if err := n.Clear(ctx); err != nil {
		t.Errorf("clear: %v", err)
	}
	if _, err := n.Counters(ctx); err == nil || !strings.Contains(err.Error(), "no netem qdisc") {
		t.Errorf("counters without netem: %v", err)
	}
}

// TestNetem runs only where the kernel has sch_netem (the stock-kernel VM).
func TestNetem(t *testing.T) {
	nstest.RequireRoot(t)
	if ok, how := preflight.KernelFeature("netem"); !ok {
		t.Skipf("this kernel has no netem (%s); the stock-kernel VM runs this test", how)
	}
	b := upProbe(t)
	addr := b.probe.Addr()
	ctx := context.Background()
	base, err := ProbeRTT(ctx, b.client, addr, 10)
	if err != nil {
		t.Fatal(err)
	}
	var targets []Target
	for _, role := range []string{topology.Client, topology.Server} {
		targets = append(targets, Target{Role: b.roles[role], Link: topology.RoleLink})
	}
	n := NewNetem(targets)
	t.Cleanup(func() { n.Clear(context.Background()) })
	c := Condition{RTT: 30 * time.Millisecond, LossPct: 0.1}
	applied, err := n.Set(ctx, c)
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("netem: %v", err)
	}
	if err != nil {
		t.Fatalf("set: %v", err)
	}
	if len(applied) != 2 || applied[0].Delay != 15*time.Millisecond || applied[1].Limit != DefaultLimit {
		t.Fatalf("applied %+v", applied)
	}
	if _, err := n.Set(ctx, c); err != nil {
		t.Fatalf("second set: %v", err)
	}
	before, err := n.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rtt, err := ProbeRTT(ctx, b.client, addr, ProbeCount)
	if err != nil {
		t.Fatal(err)
	}
	after, err := n.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v := Judge(c, rtt, EndToEnd{}, nil, SubAll(after, before))
	t.Logf("netem RTT median %s (base %s); verdict %+v", rtt.Median, base.Median, v)
	// The delay is in force: netem never releases early, and the read-back
	// above pins it to 15 ms per direction. The 1 ms judgement is the run's
	// (Judge, logged above): under software emulation on a busy host the
	// guest's own timers add milliseconds, which a test cannot hold it to.
	if rtt.Median < c.RTT {
		t.Errorf("RTT %s, want at least the configured %s", rtt.Median, c.RTT)
	}
	for _, d := range SubAll(after, before) {
		if d.Sent == 0 {
			t.Errorf("%s: netem counted no packets", d.Where)
		}
		t.Logf("%s", d.Text(MethodNetem, nil))
	}
	if err := n.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Clear(ctx); err != nil {
		t.Fatalf("second clear: %v", err)
	}
	for _, tg := range targets {
		if st, err := netemCountersOp.On(ctx, tg.Role, netemRequest{Link: tg.Link}); err != nil || st.Found {
			t.Errorf("%s: netem left after clear (%v)", tg.Role.Name(), err)
		}
	}
}

// The loss figure, counted twice and asserted: a UDP flow (iperf3 -u -R,
// 50 Mbit/s of 1000-byte datagrams for 4 s, about 25 000 packets) through
// 2 % loss per direction. The forwarder's own count of what it dropped on
// the server's egress, and the datagrams the server's UDP sent that never
// reached the client's UDP (the namespaces' kernel counters), must each
// lie within 5 standard deviations of the binomial expectation n·p
// (σ = √(n·p·(1−p))): a correct emulator fails this about once in 1.7
// million runs, one that drops 1.4 % or 2.6 % nearly always does. The two
// counts must agree. iperf3's own receiver count is only logged: on this
// busy host the client's socket buffer overflows (2–27 % here) and iperf3
// reports losses the path never made.
func TestUserspaceLossCounted(t *testing.T) {
	topo := upProbe(t).topo
	u := newTestUserspace(t, topo)
	ctx := context.Background()
	c := Condition{RTT: 2 * time.Millisecond, LossPct: 2, Seed: 7}
	if _, err := u.Set(ctx, c); err != nil {
		t.Fatal(err)
	}
	// iperf3's UDP test starts with a datagram each way; one lost to the
	// condition fails the test before it runs ("error" in its JSON): up
	// to three attempts, each counted on its own.
	var before, after []Counters
	var srvTx uint64
	var srv0, cli0, srv, cli map[string]uint64
	var out struct {
		Error string `json:"error"`
		End   struct {
			SumReceived struct {
				Packets int64 `json:"packets"`
				Lost    int64 `json:"lost_packets"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	for attempt := 1; ; attempt++ {
		before = drained(t, u)
		srvTx0 := linkPackets(t, topo, topology.Server, false)
		srv0, cli0 = snmpCounters(t, topo, topology.Server), snmpCounters(t, topo, topology.Client)
		b := iperf3JSON(t, topo, "-u", "-R", "-b", "50M", "-l", "1000", "-t", "4")
		after = drained(t, u)
		srvTx = linkPackets(t, topo, topology.Server, false) - srvTx0
		srv, cli = snmpCounters(t, topo, topology.Server), snmpCounters(t, topo, topology.Client)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("iperf3: %v\n%s", err, b)
		}
		if out.Error == "" {
			break
		}
		if attempt == 3 {
			t.Fatalf("iperf3 failed three times, last: %s", out.Error)
		}
		t.Logf("iperf3 attempt %d: %s", attempt, out.Error)
	}
	// Datagrams the server's UDP sent, and those that reached the client:
	// what its IP layer delivered to a protocol, less TCP's and ICMP's
	// share. Not UDP's own counters: InDatagrams counts a datagram when the
	// application reads it, and those still queued when iperf3 closes its
	// socket (it stops reading at the end of its test, the server sends to
	// the end and the delay line holds the last ones) are counted nowhere
	// — a busy CI host once left 17 unread: 493 "lost" against 476 dropped.
	d := func(m, m0 map[string]uint64, name string) uint64 { return m[name] - m0[name] }
	sent := d(srv, srv0, "Udp.OutDatagrams")
	arrived := d(cli, cli0, "Ip.InDelivers") - d(cli, cli0, "Tcp.InSegs") - d(cli, cli0, "Icmp.InMsgs")
	var server, client Counters
	for _, d := range SubAll(after, before) {
		switch d.Role {
		case topology.Server:
			server = d
		case topology.Client:
			client = d
		}
	}
	p := c.LossPct / 100
	n, lost := server.Offered(), server.Dropped
	if ok, lo, hi := withinBinomial(lost, n, p, 5); !ok || n < 20000 {
		t.Errorf("forwarder: dropped %d of %d packets on the server's egress (%.3f %%); want %d–%d of at least 20000 for %.0f %%",
			lost, n, pct(lost, n), lo, hi, c.LossPct)
	}
	// Everything the server's eth0 sent reached the forwarder.
	if srvTx != n {
		t.Errorf("the server's eth0 sent %d frames, the forwarder saw %d", srvTx, n)
	}
	e2eLost := sent - min(arrived, sent)
	if ok, lo, hi := withinBinomial(e2eLost, sent, p, 5); !ok || sent < 20000 {
		t.Errorf("end to end: the server's UDP sent %d datagrams, %d reached the client's: %d lost (%.3f %%); want %d–%d for %.0f %%",
			sent, arrived, e2eLost, pct(e2eLost, sent), lo, hi, c.LossPct)
	}
	// The flow's datagrams are nearly all the server's frames (the rest:
	// iperf3's control connection), so the two counts agree closely.
	if diff := int64(lost) - int64(e2eLost); diff < 0 || diff > 10 {
		t.Errorf("the counts disagree: %d datagrams lost end to end, %d frames dropped by the forwarder", e2eLost, lost)
	}
	if extra := server.Overlimits + server.SocketDrops + server.SendErrors + client.SocketDrops + client.SendErrors; extra > 0 {
		t.Errorf("losses beside the emulated ones: server %+v, client %+v", server, client)
	}
	e2e := out.End.SumReceived
	t.Logf("2 %% loss: forwarder dropped %d of %d (%.3f %%); UDP end to end: %d of %d lost (%.3f %%), %d more dropped by the client's full socket buffer; iperf3's receiver: %d of %d (%.3f %%)",
		lost, n, pct(lost, n), e2eLost, sent, pct(e2eLost, sent), d(cli, cli0, "Udp.RcvbufErrors"),
		e2e.Lost, e2e.Packets, pct(uint64(e2e.Lost), uint64(e2e.Packets)))
}

// drained waits, up to 5 s, until the forwarder holds nothing in its delay
// lines, and returns its counters then: a packet still held is neither
// counted as passed on nor as dropped.
func drained(t *testing.T, u *Userspace) []Counters {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cs, err := u.Counters(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held := uint64(0)
		for _, c := range cs {
			held += c.Backlog
		}
		if held == 0 {
			return cs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the forwarder still holds %d packets after 5 s: %+v", held, cs)
		}
		time.Sleep(5 * time.Millisecond) // polling the forwarder's backlog, not synchronising on time
	}
}

// snmpCounters reads a role's IP, ICMP, TCP and UDP counters
// (/proc/net/snmp, as the role's namespace sees it) as "Proto.Name".
func snmpCounters(t *testing.T, topo *topology.Topology, role string) map[string]uint64 {
	t.Helper()
	var b []byte
	err := topo.Roles[role].NS.Do(func() (err error) {
		b, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each section is a line of names, then one of values, both led by
	// the section's name ("Udp:").
	m := map[string]uint64{}
	names := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		sect := strings.TrimSuffix(f[0], ":")
		if names[sect] == nil {
			names[sect] = f[1:]
			continue
		}
		for i, v := range f[1:] {
			m[sect+"."+names[sect][i]], _ = strconv.ParseUint(v, 10, 64)
		}
	}
	for _, want := range []string{"Ip.InDelivers", "Tcp.InSegs", "Icmp.InMsgs", "Udp.OutDatagrams"} {
		if _, ok := m[want]; !ok {
			t.Fatalf("no %s in %s's snmp", want, role)
		}
	}
	return m
}

func pct(k, n uint64) float64 { return 100 * float64(k) / float64(n) }

// withinBinomial reports whether k events in n trials of probability p lie
// within sigmas standard deviations of n·p, and the accepted range.
func withinBinomial(k, n uint64, p, sigmas float64) (ok bool, lo, hi uint64) {
	mean := float64(n) * p
	d := sigmas * math.Sqrt(mean*(1-p))
	lo, hi = uint64(math.Max(0, math.Ceil(mean-d))), uint64(math.Floor(mean+d))
	return k >= lo && k <= hi, lo, hi
}
