package nsbench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// testbed is what a run and the self-check stand on: the bed (the private
// directory, the roles, the server fixtures, the teardown), the payload
// and the meters read around every sample. up builds it, pushing each
// undo as soon as its creation succeeded; down tears it all down in
// reverse, together with whatever the run built on it (onTeardown).
//
// transport.Testbed is the same testbed as a transport sees it (view):
// where to start processes, the fixtures, the run's directories.
type testbed struct {
	*bed
	payload *payload // nil when no instrument copies a file
	sampler *metrics.Sampler
	client  clientSide
}

// clientSide is what the instruments in the client role are given.
type clientSide struct {
	// udpBuffer is the UDP socket buffer the kernel allows the client and
	// the server, up to instrument.MaxUDPBuffer.
	udpBuffer int
	ssh       instrument.SSHClient
}

// newTestbed names a new testbed and makes its log directory; nothing
// else exists until up.
func newTestbed(cfg testbedConfig, logf Logf) (*testbed, error) {
	b, err := newBed(cfg, logf)
	if err != nil {
		return nil, err
	}
	return &testbed{bed: b}, nil
}

// detectFormTimeout bounds trying the scp forms on a small file over the
// plain path (each form takes well under a second here).
const detectFormTimeout = 60 * time.Second

// viaAgents, set only by tests, gives each role a connection to an agent
// that carries out its work: the run then reaches its roles as it reaches
// roles on other hosts, every op, program and file over the wire.
var viaAgents func(ctx context.Context, prefix, roleName string) (*role.Wire, error)

// reachThroughAgents replaces each role by the same role reached through
// its agent, and makes its private directory there.
func (tb *testbed) reachThroughAgents(ctx context.Context, roles map[string]*role.Role) error {
	for name, r := range roles {
		c, err := viaAgents(ctx, tb.prefix, name)
		if err != nil {
			return fmt.Errorf("%s: agent: %w", name, err)
		}
		v := role.Via(c, r)
		if err := role.MkdirAll(ctx, v, v.Dir(), role.PrivateDirMode); err != nil {
			return err
		}
		roles[name] = v
	}
	return nil
}

// up builds the testbed, recording what it built in rec.
func (tb *testbed) up(ctx context.Context, rec *recorder) error {
	dir, err := tb.privateDir()
	if err != nil {
		return err
	}
	spec := tb.switchSpec()
	var roles map[string]*role.Role
	var machines func() (map[string]metrics.HostReading, error)
	if tb.cfg.Sites.On() {
		t0 := time.Now()
		sites := tb.cfg.Sites
		// First on the teardown: each agent, once its session is closed,
		// removes what it built, then the copies and the connections go.
		tb.onTeardown("hosts' agents, copies and connections", func(context.Context) error { return sites.Close() })
		rs, built, err := tb.upOnHosts(ctx, spec, sites.roleSites())
		if err != nil {
			return fmt.Errorf("hosts: %w", err)
		}
		rec.setup.hosts(describeHosts(built, tb.cfg.WAN), time.Since(t0))
		roles, machines = rs, hostsNoise(built, tb.prefix)
		rec.setup.machines(readMachines(ctx, hostMachines(built), tb.cfg.Programs, tb.logf))
	} else {
		t0 := time.Now()
		rs, links, err := tb.upHere(ctx, spec, dir)
		if err != nil {
			return err
		}
		rec.setup.topology(spec, tb.prefix, time.Since(t0))
		tb.logf("topology up in %.0f ms: %s", rec.doc.Timings.TopologyUpSec*1000, rec.doc.Env.Topology)
		roles = rs
		rec.setup.machines(readMachines(ctx, []machine{thisMachine(spec, links)}, tb.cfg.Programs, tb.logf))
	}

	if tb.cfg.Payload > 0 {
		tb.logf("writing %s of random payload to tmpfs", FormatSize(tb.cfg.Payload+tb.cfg.Warm))
		srv := roles[topology.Server]
		p, err := mountPayloadOp.On(ctx, srv, payloadSize{Dir: srv.Dir(), Large: tb.cfg.Payload, Warm: tb.cfg.Warm})
		if err != nil {
			return fmt.Errorf("payload: %w", err)
		}
		tb.onTeardown("payload tmpfs", func(ctx context.Context) error {
			_, err := unmountPayloadOp.On(ctx, srv, p)
			return err
		})
		tb.payload = &p
	} else {
		// No instrument copies a file: none is written, and no condition
		// claims a payload size.
		rec.setup.noPayload()
	}

	if viaAgents != nil {
		if err := tb.reachThroughAgents(ctx, roles); err != nil {
			return err
		}
	}
	if err := tb.startFixtures(ctx, roles, dir); err != nil {
		return err
	}

	tb.sampler = &metrics.Sampler{
		Roles:         map[string]func() (uint64, error){},
		ClientRxBytes: role.Meter(roles[topology.Client], role.RxBytes),
		Machines:      machines,
	}
	if tb.tree != nil {
		tb.sampler.Run, tb.sampler.RunCgroup = tb.tree.Usage, tb.tree.Name()
	}
	for name, r := range roles {
		tb.sampler.Roles[name] = role.Meter(r, role.CPUUsec)
	}

	if tb.client.udpBuffer, err = socketBufferLimit(ctx, roles); err != nil {
		return err
	}
	fx := tb.view.Fixtures
	tb.client.ssh = instrument.SSHClient{User: transport.BenchUser, KeyPath: fx.KeyPath, KnownHosts: fx.KnownHosts}
	if tb.payload != nil {
		probe := tb.job(tb.direct())
		dctx, cancel := context.WithTimeout(ctx, detectFormTimeout)
		form, err := instrument.DetectForm(dctx, probe, tb.payload.Probe)
		cancel()
		if err != nil {
			return fmt.Errorf("scp against plain SSH: %w", err)
		}
		tb.client.ssh.Form = form
		rec.setup.scp(form, instrument.OptionsString())
	}
	return nil
}

// direct is the path to the server as the client reaches it without any
// transport.
func (tb *testbed) direct() *transport.Path {
	return &transport.Path{Target: transport.DirectTarget(tb.role(topology.Server).Addr().String())}
}

// job is an instrument's job through p from the client role: aimed at its
// target, with its pieces to restart.
func (tb *testbed) job(p *transport.Path) *instrument.Job {
	return &instrument.Job{
		Target:       p.Target,
		Duration:     tb.cfg.Duration,
		SSH:          tb.client.ssh,
		Run:          runIn(tb.role(topology.Client)),
		SocketBuffer: tb.client.udpBuffer,
		UDPRcvbufErrors: func(ctx context.Context) (uint64, error) {
			st, err := role.UDPStats(ctx, tb.role(topology.Client))
			return st.RcvbufErrors, err
		},
		ServerIdle: tb.serverIdle,
		Faults: instrument.Faults{
			FlapLink: func(ctx context.Context, d time.Duration) (time.Time, time.Time, error) {
				f, err := role.FlapLink(ctx, tb.role(topology.Client), d)
				return time.Unix(0, f.DownNs), time.Unix(0, f.UpNs), err
			},
			Restarts: p.Restarts,
			EndConnection: func(ctx context.Context, local, remote netip.AddrPort) error {
				return role.EndConnection(ctx, tb.role(topology.Server), role.Conn{Local: local, Remote: remote})
			},
		},
	}
}

// runIn runs a tool in role r; instrument.SelfTool is twnsbench itself
// there, named in its log after its subcommand.
func runIn(r *role.Role) func(ctx context.Context, name string, args ...string) (proc.Result, error) {
	return func(ctx context.Context, name string, args ...string) (proc.Result, error) {
		if name != instrument.SelfTool || len(args) == 0 {
			return r.Run(ctx, name, args...)
		}
		return r.RunProgram(ctx, r.Program(args[0], append([]string{r.Self()}, args...)...))
	}
}

// quietWait is how long a sample waited for what the previous one left.
type quietWait struct {
	Idle  time.Duration // the one-test-at-a-time servers' connections closing
	Drain time.Duration // the roles' TCP send queues draining
}

// quietTimeout bounds each wait of waitQuiet: a path that cannot close a
// connection or deliver a queue in this long is broken, not slow.
const quietTimeout = 30 * time.Second

// waitQuiet waits, outside the meters, until the previous sample has left
// nothing this one would meet. First every one-test-at-a-time service in
// needs is idle on the server (the previous test's close has come through
// the transport). Then the TCP send queues of every role are drained: a
// transport that carries every test in one TCP connection (Pure SSH, tw,
// sshuttle) still delivers, after a bulk test, what the server side had
// queued into it, at the rate that test measured — on a lossy WAN for
// seconds — and the next test's traffic would wait behind it (a 1 s TCP_RR
// can then see no answer at all).
func (tb *testbed) waitQuiet(ctx context.Context, in instrument.Instrument) (quietWait, error) {
	var w quietWait
	for _, svc := range in.Needs().Exclusive {
		waited, err := tb.serverIdle(ctx, transport.FixturePorts()[svc])
		w.Idle += waited
		if err != nil {
			return w, fmt.Errorf("%s server not idle: %w", svc, err)
		}
	}
	var err error
	w.Drain, err = pollUntil(ctx, quietTimeout, func() (bool, string, error) {
		queued, where, err := sendQueued(ctx, tb.view.Roles)
		return queued == 0, fmt.Sprintf("%d bytes were queued to send (%s)", queued, where), err
	})
	if err != nil {
		return w, fmt.Errorf("the previous test's data not delivered: %w", err)
	}
	return w, nil
}

// serverIdle waits until no connection to port is open in the server's
// namespace, and returns how long that took.
func (tb *testbed) serverIdle(ctx context.Context, port int) (time.Duration, error) {
	server := tb.role(topology.Server)
	return pollUntil(ctx, quietTimeout, func() (bool, string, error) {
		st, err := role.TCP(ctx, server)
		n := metrics.OpenConns(st.Sockets, port)
		return n == 0, fmt.Sprintf("server port %d had %d open connections", port, n), err
	})
}

// sendQueued is the bytes the roles' TCP sockets still have to deliver,
// and which roles hold them.
func sendQueued(ctx context.Context, roles map[string]*role.Role) (int64, string, error) {
	var total int64
	var where []string
	for _, name := range slices.Sorted(maps.Keys(roles)) {
		st, err := role.TCP(ctx, roles[name])
		if err != nil {
			return 0, "", fmt.Errorf("%s: %w", name, err)
		}
		if q := metrics.SendQueued(st.Sockets); q > 0 {
			total += q
			where = append(where, fmt.Sprintf("%s %d", name, q))
		}
	}
	return total, strings.Join(where, ", "), nil
}

// synRetrans is how many SYNs and SYN-ACKs the roles have retransmitted
// so far (a cumulative count: the caller subtracts).
func synRetrans(ctx context.Context, roles map[string]*role.Role) (uint64, error) {
	var n uint64
	for name, r := range roles {
		st, err := role.TCP(ctx, r)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		n += st.SynRetrans
	}
	return n, nil
}

// pollUntil checks done, backing off from 1 ms to 100 ms, until it holds or
// bound has passed, and returns how long it waited (0 when done held at
// once). At the bound the error says the last state.
func pollUntil(ctx context.Context, bound time.Duration, done func() (bool, string, error)) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		ok, state, err := done()
		if err != nil || ok {
			if delay == time.Millisecond {
				return 0, err // at once: no wait to report
			}
			return time.Since(start), err
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("%s after %s", state, time.Since(start).Round(time.Millisecond))
		case <-time.After(delay):
		}
	}
}

// keptHelp tells how to enter each role of a kept testbed.
func (tb *testbed) keptHelp() []string {
	var lines []string
	spec := *tb.spec
	for _, role := range spec.Roles {
		lines = append(lines, fmt.Sprintf("sudo ip netns exec %s bash   # %s, %s", spec.NetnsName(role), role, spec.Addr(role)))
	}
	return lines
}

// socketBufferLimit is the largest socket buffer both the client and the
// server namespaces allow (net.core.rmem_max and wmem_max), capped at
// instrument.MaxUDPBuffer. Newer kernels keep these per namespace and show
// them inside it; older ones (Debian 12's 6.1) only in the initial
// namespace of the role's machine, where the value then holds for all.
func socketBufferLimit(ctx context.Context, roles map[string]*role.Role) (int, error) {
	limit := instrument.MaxUDPBuffer
	for _, name := range []string{topology.Client, topology.Server} {
		for _, key := range []string{"rmem_max", "wmem_max"} {
			b, err := role.ReadFile(ctx, roles[name], "/proc/sys/net/core/"+key)
			if errors.Is(err, os.ErrNotExist) {
				b, err = role.SocketBufferMax(ctx, role.MachineOf(roles[name]), key)
			}
			if err != nil {
				return 0, fmt.Errorf("%s: read net.core.%s: %w", name, key, err)
			}
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return 0, fmt.Errorf("%s: net.core.%s %q: %w", name, key, b, err)
			}
			limit = min(limit, n)
		}
	}
	return limit, nil
}
