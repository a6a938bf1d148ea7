package impair

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// The userspace impairment's own figures on this machine: its throughput
// ceiling, its delay error and its loss error. They take about a minute
// and load the host, so they run only when asked:
//
//	sudo TWNSB_MEASURE=1 go test -run TestMeasure -v ./nsbench/impair/
func requireMeasure(t *testing.T) {
	t.Helper()
	nstest.RequireRoot(t)
	if os.Getenv("TWNSB_MEASURE") == "" {
		t.Skip("a measurement, not a test: set TWNSB_MEASURE=1 to run it")
	}
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("needs iperf3")
	}
}

// iperf3 runs a reverse (server → client) TCP test of d through the
// topology and returns the received Gbit/s.
func iperf3(t *testing.T, topo *topology.Topology, d time.Duration, streams int) float64 {
	t.Helper()
	b := iperf3JSON(t, topo, "-R", "-C", "cubic", "-t", itoa(int(d/time.Second)), "-P", itoa(streams))
	var out struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.End.SumReceived.BitsPerSecond == 0 {
		t.Fatalf("iperf3: %v\n%s", err, b)
	}
	return out.End.SumReceived.BitsPerSecond / 1e9
}

// iperf3JSON runs iperf3's client in the client namespace against a fresh
// server in the server namespace, with args, and returns its JSON.
func iperf3JSON(t *testing.T, topo *topology.Topology, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	srv, err := proc.Start(proc.Program{Name: "server/iperf3", NetNS: topo.Roles[topology.Server].NS.Path(),
		Argv: []string{"iperf3", "-s", "-p", "5299"}, Log: filepath.Join(dir, "iperf3-server.log")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(time.Second)
	addr := topo.Spec.Addr(topology.Server).String()
	if err := proc.WaitTCP(context.Background(), topo.Roles[topology.Client].NS, addr+":5299", srv); err != nil {
		t.Fatal(err)
	}
	res, err := proc.Run(context.Background(), proc.Program{Name: "client/iperf3", NetNS: topo.Roles[topology.Client].NS.Path(),
		Argv: append([]string{"iperf3", "-c", addr, "-p", "5299", "-J"}, args...)})
	if err != nil {
		t.Fatalf("iperf3: %v\n%s", err, res.Stderr)
	}
	return res.Stdout
}

func itoa(n int) string { return formatFloat(float64(n)) }

// TestMeasureCeiling: the forwarder with no delay and no loss, against the
// bridge it replaces.
func TestMeasureCeiling(t *testing.T) {
	requireMeasure(t)
	topo := upProbe(t).topo
	const d = 10 * time.Second
	bridge := iperf3(t, topo, d, 1)
	u := newTestUserspace(t, topo)
	if _, err := u.Set(context.Background(), Condition{}); err != nil {
		t.Fatal(err)
	}
	one := iperf3(t, topo, d, 1)
	four := iperf3(t, topo, d, 4)
	st, _ := u.status()
	t.Logf("ceiling at 0 ms, 0 %% (iperf3 -R -C cubic, %s): bridge %.2f Gbit/s; forwarder 1 stream %.2f Gbit/s, 4 streams %.2f Gbit/s (%s)",
		d, bridge, one, four, st.Sched)
}

// TestMeasureDelay: 200 handshake RTTs through a 30 ms condition.
func TestMeasureDelay(t *testing.T) {
	requireMeasure(t)
	b := upProbe(t)
	topo, addr := b.topo, b.probe.Addr()
	u := newTestUserspace(t, topo)
	c := Condition{RTT: 30 * time.Millisecond}
	if _, err := u.Set(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	r, err := ProbeRTT(context.Background(), b.client, addr, 200)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("delay at 30 ms RTT over %d handshakes (kernel TCP RTT): median %s (error %+.3f ms), min %s, max %s",
		r.N, r.Median, float64(r.Median-c.RTT)/1e6, r.Min, r.Max)
}

// TestMeasureLoss: 1 % per direction over a bulk transfer long enough for
// 100k+ packets, counted twice: by the forwarder, and independently by the
// roles' interfaces (what the server's eth0 sent against what the client's
// received). Each direction's drops must lie within 5σ of the binomial
// expectation, and the forwarder must have seen every frame the server
// sent. (TestUserspaceLossCounted asserts the same on every test run.)
func TestMeasureLoss(t *testing.T) {
	requireMeasure(t)
	topo := upProbe(t).topo
	u := newTestUserspace(t, topo)
	c := Condition{RTT: 2 * time.Millisecond, LossPct: 1, Seed: 1}
	if _, err := u.Set(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	before, _ := u.Counters(context.Background())
	srvTx0, cliRx0 := linkPackets(t, topo, topology.Server, false), linkPackets(t, topo, topology.Client, true)
	gbps := iperf3(t, topo, 30*time.Second, 8)
	after, err := u.Counters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	srvTx, cliRx := linkPackets(t, topo, topology.Server, false)-srvTx0, linkPackets(t, topo, topology.Client, true)-cliRx0
	cell := SubAll(after, before)
	v := Judge(c, RTT{Median: c.RTT, N: 1}, EndToEnd{}, nil, cell)
	for _, d := range cell {
		t.Logf("%s: %d offered, %d lost = %.4f %%", d.Where, d.Offered(), d.Lost(), 100*float64(d.Lost())/float64(d.Offered()))
		// Each direction's drops are binomial: within 5σ of n·p.
		if ok, lo, hi := withinBinomial(d.Lost(), d.Offered(), c.LossPct/100, 5); !ok {
			t.Errorf("%s: %d lost of %d; want %d–%d for %v %%", d.Where, d.Lost(), d.Offered(), lo, hi, c.LossPct)
		}
		if d.Role == topology.Server && d.Offered() != srvTx {
			t.Errorf("the server's eth0 sent %d frames, the forwarder saw %d", srvTx, d.Offered())
		}
	}
	t.Logf("loss at 1 %% (iperf3 -R -P 8 30 s, %.3f Gbit/s): forwarder counters %.4f %% over %d packets (%+.1f %% relative); "+
		"server eth0 → client eth0: %d sent, %d received = %.4f %% lost", gbps, v.CounterLossPct, v.CounterPackets,
		100*(v.CounterLossPct-c.LossPct)/c.LossPct, srvTx, cliRx, 100*(1-float64(cliRx)/float64(srvTx)))
}

// linkPackets reads a role's eth0 packet counter (received or sent).
func linkPackets(t *testing.T, topo *topology.Topology, role string, rx bool) uint64 {
	t.Helper()
	h, err := topo.Roles[role].NS.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	l, err := h.LinkByName(topology.RoleLink)
	if err != nil {
		t.Fatal(err)
	}
	if rx {
		return l.Attrs().Statistics.RxPackets
	}
	return l.Attrs().Statistics.TxPackets
}
