package impair

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// linkDrops reads every link's rx/tx dropped counters in n.
func linkDrops(t *testing.T, n *ns.NS) map[string][2]uint64 {
	h, err := n.Netlink()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]uint64{}
	for _, l := range links {
		if s := l.Attrs().Statistics; s != nil {
			out[l.Attrs().Name] = [2]uint64{s.RxDropped, s.TxDropped}
		}
	}
	return out
}

// softnetDrops is /proc/net/softnet_stat's drop column (netdev backlog
// overflow), one per CPU.
func softnetDrops() string {
	b, _ := os.ReadFile("/proc/net/softnet_stat")
	var ds []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 {
			ds = append(ds, f[1])
		}
	}
	return strings.Join(ds, ",")
}

// TestMeasureLossProbeWhere: where the loss probe's datagrams are lost,
// at rates up to twice what a busy host's receivers keep up with: the
// forwarder's loss draws, its queue and socket drops, every link's
// dropped counters in the three namespaces, the host's softnet backlog
// drops, and the probe sockets' own overflow; then the verdict. Run it
// beside CPU hogs to see the probe's sockets overflow and the verdict fall
// back:
//
//	sudo TWNSB_MEASURE=1 go test -run TestMeasureLossProbeWhere -v ./nsbench/impair/
func TestMeasureLossProbeWhere(t *testing.T) {
	requireMeasure(t)
	b := upProbe(t)
	topo, ln := b.topo, b.probe
	ctx := context.Background()
	u := newTestUserspace(t, topo)
	c := Condition{RTT: 20 * time.Millisecond, LossPct: 0.5, Seed: 7}
	if _, err := u.Set(ctx, c); err != nil {
		t.Fatal(err)
	}
	nss := map[string]*ns.NS{"client": topo.Roles[topology.Client].NS, "server": topo.Roles[topology.Server].NS, "switch": topo.Switch}
	for _, rate := range []int{20000, 10000, 4000} {
		for rep := 0; rep < 1; rep++ {
			lp := LossProbe{Count: rate * 3, Rate: rate}
			st0, err := u.status()
			if err != nil {
				t.Fatal(err)
			}
			l0 := map[string]map[string][2]uint64{}
			for k, n := range nss {
				l0[k] = linkDrops(t, n)
			}
			sn0 := softnetDrops()
			start := time.Now()
			e, err := ln.ProbeLoss(ctx, lp, c.RTT)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			st1, err := u.status()
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "rate %d: %s: sent %d arrived %d echoed %d returned %d sockdrops %d unsettled %q lost %d = %.3f %%\n",
				rate, took.Round(time.Millisecond), e.Sent, e.Arrived, e.Echoed, e.Returned, e.SocketDrops, e.Unsettled, e.Lost(), e.LossPct())
			for i, p := range st1.Ports {
				q := st0.Ports[i]
				fmt.Fprintf(&b, "  port %s: received %d lossdrops %d (%.3f %%) queuedrops %d pktsockdrops %d senderr %d\n", p.Name,
					p.Received-q.Received, p.LossDrops-q.LossDrops, 100*float64(p.LossDrops-q.LossDrops)/float64(max(1, p.Received-q.Received)),
					p.QueueDrops-q.QueueDrops, p.SocketDrops-q.SocketDrops, p.SendErrors-q.SendErrors)
			}
			for k, n := range nss {
				for name, d := range linkDrops(t, n) {
					o := l0[k][name]
					if d != o {
						fmt.Fprintf(&b, "  %s %s: rx_dropped +%d tx_dropped +%d\n", k, name, d[0]-o[0], d[1]-o[1])
					}
				}
			}
			var during []Counters
			for i, p := range st1.Ports {
				if p.Impaired {
					q := st0.Ports[i]
					during = append(during, Counters{Role: p.Role, Sent: p.Forwarded - q.Forwarded, Dropped: p.LossDrops - q.LossDrops + p.QueueDrops - q.QueueDrops,
						Overlimits: p.QueueDrops - q.QueueDrops, LostOutside: LostOutside{SocketDrops: p.SocketDrops - q.SocketDrops, SendErrors: p.SendErrors - q.SendErrors}})
				}
			}
			v := Judge(c, RTT{Median: c.RTT, N: 1}, e, during, nil)
			fmt.Fprintf(&b, "  verdict: loss ok %v, %.3f %% (%.3f–%.3f %%); %s\n", v.LossOK, v.MeasuredLossPct, v.LossLowPct, v.LossHighPct, v.Note)
			fmt.Fprintf(&b, "  softnet drops %s -> %s", sn0, softnetDrops())
			t.Log(b.String())
		}
	}
}
