package fanout

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// streamSlack bounds a client's iperf3 beyond its duration: connecting,
// the end exchange. A client past it has stalled and costs its share.
const streamSlack = 30 * time.Second

// Run sweeps every transport over every count of plan, one testbed per
// transport and N (built by up), writing doc to plan.OutDir after every
// row. A transport that is no Fanner, or cannot run here, is skipped with
// its reason; a row that fails records its error and the sweep goes on.
// It stops early only when ctx ends.
func Run(ctx context.Context, plan Plan, ts []transport.Transport, doc *results.Clients, up UpBed, logf func(string, ...any)) error {
	if err := CheckDuration(plan.Duration); err != nil {
		return err
	}
	var run []transport.Transport
	for _, t := range ts {
		if _, ok := transport.FannerOf(t); !ok {
			doc.Skipped = append(doc.Skipped, results.Skipped{Transport: t.Name(), Label: t.Label(),
				Reason: "many clients are not built for this transport yet"})
			continue
		}
		if plan.Checked {
			run = append(run, t)
			continue
		}
		if err := t.Check(); err != nil {
			doc.Skipped = append(doc.Skipped, results.Skipped{Transport: t.Name(), Label: t.Label(), Reason: err.Error()})
			continue
		}
		run = append(run, t)
	}
	return sweep(ctx, plan, run, doc, func(t transport.Transport, n int, cond string) results.ClientsRow {
		f, _ := transport.FannerOf(t)
		return measureN(ctx, plan, up, t, f, Shape{Clients: n, Condition: cond}, logf)
	}, logf)
}

// sweep measures every transport at every count under every condition,
// plan.Runs times over: each run measures all of them once before the
// next begins, so what drifts over the sweep falls on every count alike;
// with plan.Alternate, count by count, the transports in alternating
// order (runOrder). The first run's rows are doc's rows, by transport,
// condition and then count; a later run's measurement of a transport, N
// and condition is a repeat of that row.
func sweep(ctx context.Context, plan Plan, ts []transport.Transport, doc *results.Clients,
	measure func(t transport.Transport, n int, cond string) results.ClientsRow, logf func(string, ...any)) error {
	path := filepath.Join(plan.OutDir, results.ClientsFileName)
	base, runs, conds := len(doc.Rows), max(plan.Runs, 1), plan.conditions()
	for r := range runs {
		if runs > 1 {
			logf("run %d of %d of the sweep", r+1, runs)
		}
		for _, at := range runOrder(plan, len(ts), r) {
			if err := ctx.Err(); err != nil {
				return err
			}
			t, n, cond := ts[at.transport], plan.Counts[at.count], conds[at.cond]
			row := measure(t, n, cond)
			row.Condition = cond
			if r == 0 {
				doc.Rows = append(doc.Rows, row)
				// By transport, condition, then count, whatever the order measured.
				slices.SortStableFunc(doc.Rows[base:], func(x, y results.ClientsRow) int {
					return cmp.Or(cmp.Compare(indexOf(ts, x.Transport), indexOf(ts, y.Transport)),
						cmp.Compare(slices.Index(conds, x.Condition), slices.Index(conds, y.Condition)), cmp.Compare(x.N, y.N))
				})
			} else {
				i := slices.IndexFunc(doc.Rows[base:], func(x results.ClientsRow) bool {
					return x.Transport == t.Name() && x.N == n && x.Condition == cond
				})
				doc.Rows[base+i].Repeats = append(doc.Rows[base+i].Repeats, row)
			}
			if err := results.WriteClients(path, doc); err != nil {
				return err
			}
		}
	}
	return results.WriteClients(path, doc)
}

// cell is a transport (by index) at a count (by index) under a condition
// (by index).
type cell struct{ transport, count, cond int }

// runOrder is the order run r measures in: every transport at every count
// under every condition, transport by transport, condition by condition;
// with plan.Alternate condition by condition and count by count, the
// transports forward at one count and backward at the next, the first
// count's direction turning from run to run (A B, B A, A B … then B A, A B
// …), so that two builds measured side by side meet the host's drift alike.
func runOrder(plan Plan, transports, r int) []cell {
	var out []cell
	conds := len(plan.conditions())
	if !plan.Alternate {
		for i := range transports {
			for c := range conds {
				for j := range plan.Counts {
					out = append(out, cell{i, j, c})
				}
			}
		}
		return out
	}
	for c := range conds {
		for j := range plan.Counts {
			for k := range transports {
				i := k
				if (c*len(plan.Counts)+j+r)%2 == 1 {
					i = transports - 1 - k
				}
				out = append(out, cell{i, j, c})
			}
		}
	}
	return out
}

// indexOf is the index of the transport named name in ts.
func indexOf(ts []transport.Transport, name string) int {
	return slices.IndexFunc(ts, func(t transport.Transport) bool { return t.Name() == name })
}

// measureN builds the N-client testbed (up), its iperf3 servers and t's
// paths, loads every client at once, reads the server's cost, tears down
// and checks that nothing is left.
func measureN(ctx context.Context, plan Plan, up UpBed, t transport.Transport, f transport.Fanner, s Shape, logf func(string, ...any)) (row results.ClientsRow) {
	n := s.Clients
	row = results.ClientsRow{Transport: t.Name(), Label: t.Label(), N: n, Condition: s.Condition}
	timing := &results.ClientsTiming{}
	t0 := time.Now()
	rn, ok := t.(transport.RoleNeeder)
	s.Relay = ok && slices.Contains(rn.NeedsRoles(), topology.Relay)
	b, err := up(ctx, s)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	defer func() {
		t1 := time.Now()
		if err := b.Down(); err != nil && row.Error == "" {
			row.Error = err.Error()
		} else if err != nil {
			row.Error += "; " + err.Error()
		}
		timing.TeardownSec = time.Since(t1).Seconds()
		timing.Residue = b.Residue()
		row.Timing = timing
	}()
	if err := startIPerf3(ctx, b, n); err != nil {
		row.Error = err.Error()
		return row
	}
	tview, err := forTransport(ctx, b, t.Name())
	if err != nil {
		row.Error = err.Error()
		return row
	}
	ports := make([]int, n)
	for i := range ports {
		ports[i] = transport.FanPort(i)
	}
	tp := time.Now()
	fan, err := f.FanUp(ctx, tview, ClientRoles(n), ports)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	b.OnTeardown("paths", func(context.Context) error { return fan.Close() })
	if fan.Label != "" {
		row.Label = fan.Label
	}
	timing.PathsSec, timing.SetupSec = time.Since(tp).Seconds(), time.Since(t0).Seconds()
	logf("%s, %d clients: set up in %.1f s (paths %.1f s)", t.Label(), n, timing.SetupSec, timing.PathsSec)

	imp := b.Impaired()
	if imp != nil {
		imp.Probe(ctx, ClientRoles(n))
	}
	server, relay := tview.Roles[topology.Server], tview.Roles[topology.Relay]
	cpu0, cerr := role.OwnCPUUsec(ctx, server)
	var rcpu0 uint64
	var rerr error
	if fan.Relay != "" {
		rcpu0, rerr = role.OwnCPUUsec(ctx, relay)
	}
	runs := loadAll(ctx, plan.Duration, b.View().Roles, fan.Targets, n)
	cpu1, cerr1 := role.OwnCPUUsec(ctx, server)
	if fan.Relay != "" {
		rcpu1, rerr1 := role.OwnCPUUsec(ctx, relay)
		if rerr == nil && rerr1 == nil {
			row.Relay = &results.RoleCost{What: fan.Relay, CPUSec: float64(rcpu1-rcpu0) / 1e6}
			row.Relay.PeakKB, row.Relay.PeakFrom = peakMemory(ctx, relay)
		}
	}
	commonWindow(runs).record(&row, ClientRoles(n), plan.Duration)
	if fan.InKernel == "" && cerr == nil && cerr1 == nil {
		row.Server = &results.RoleCost{What: fan.Server, CPUSec: float64(cpu1-cpu0) / 1e6}
		row.Server.PeakKB, row.Server.PeakFrom = peakMemory(ctx, server)
	}
	if imp != nil {
		row.WAN = imp.Verify(ctx, row)
	}
	return row
}

// loadAll runs one iperf3 stream per client, the server sending (-R, as
// the iperf3 instruments), each from its client's namespace to its
// target, and returns each client's run. The clients wait for one signal
// to start, so that their windows overlap as far as the harness can make
// them; commonWindow reads what they shared.
func loadAll(ctx context.Context, d time.Duration, roles map[string]*role.Role, targets []string, n int) []clientRun {
	out := make([]clientRun, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, name := range ClientRoles(n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = stream(ctx, start, d, roles[name], targets[i])
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// stream is one client's iperf3, started when start closes, with the
// harness's clock around it.
func stream(ctx context.Context, start <-chan struct{}, d time.Duration, r *role.Role, target string) clientRun {
	host, port, err := splitHostPort(target)
	if err != nil {
		return clientRun{err: err}
	}
	args := iperf3Args(host, port, d)
	<-start
	ctx, cancel := context.WithTimeout(ctx, d+streamSlack)
	defer cancel()
	run := clientRun{launched: time.Now()}
	res, err := r.Run(ctx, "iperf3", args...)
	run.exited = time.Now()
	if err != nil {
		run.err = fmt.Errorf("iperf3: %w", err)
	}
	run.out = res.Stdout
	return run
}

// iperf3Args are a client's iperf3 arguments: -t in whole seconds (the
// plan's duration is one, CheckDuration), reports every intervalSec.
func iperf3Args(host, port string, d time.Duration) []string {
	return []string{"-c", host, "-p", port, "-R", "-t", strconv.Itoa(int(d / time.Second)), "-i", intervalSec, "-J"}
}

// peakMemory is r's leaf's memory.peak, else the sum of its processes'
// VmHWM, and which it is; nil when neither is readable.
func peakMemory(ctx context.Context, r *role.Role) (*int64, string) {
	if kb, ok := role.OwnMemoryPeakKB(ctx, r); ok {
		return &kb, "memory.peak"
	}
	pids, err := role.PIDs(ctx, r)
	if err != nil || len(pids) == 0 {
		return nil, ""
	}
	var sum int64
	for _, pid := range pids {
		kb, err := role.PeakRSSKB(ctx, r, pid)
		if err != nil {
			return nil, ""
		}
		sum += kb
	}
	return &sum, "VmHWM sum"
}
