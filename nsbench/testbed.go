package nsbench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/safedir"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// teardownTimeout bounds the whole teardown, which runs under a fresh
// context so that a cancelled run still cleans up.
const teardownTimeout = 60 * time.Second

// testbedConfig is what a testbed is built to.
type testbedConfig struct {
	OutDir     string
	Congestion string              // "host" keeps the host's default
	NIC        string              // NICReference or NICOwn
	Own        []transport.Service // twnsbench's own servers an instrument needs (many-rr, rpm); the others are not started
	Payload    int64               // bytes of the scp payload; 0: no instrument copies it, and none is written
	Warm       int64               // bytes of the warm-up copy
	// Programs are the run's transports' own programs by role
	// (transport.ProgramsByRole): each machine states their versions
	// with its facts, beside the harness's own.
	Programs map[string][]preflight.Tool
	Duration time.Duration // of each instrument's measurement
	Sites    *Sites        // roles on other hosts, reached; nil: all on this one
	// WAN says a WAN condition will impair the roles: across hosts each
	// stands behind an edge (topology.LinkSpec.Edge).
	WAN bool
}

// testbed is what a run and the self-check stand on: the private
// directory, the topology, the roles' cgroups, the payload, the server
// fixtures and the meters read around every sample. up builds it, pushing
// each undo as soon as its creation succeeded; down tears it all down in
// reverse, together with whatever the run built on it (onTeardown).
//
// transport.Testbed is the same testbed as a transport sees it (view):
// where to start processes, the fixtures, the run's directories.
type testbed struct {
	cfg     testbedConfig
	prefix  string
	logf    Logf
	stack   undoStack
	spec    *topology.Spec     // of the switch on this host; nil until up built it (and across hosts)
	view    *transport.Testbed // nil until up built the topology
	tree    *role.Tree         // the run's cgroups
	payload *payload           // nil when no instrument copies a file
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
	var prefix string
	if cfg.Sites.On() {
		prefix = cfg.Sites.Prefix() // the hosts' copies and agents are named for it
	} else {
		var err error
		if prefix, err = topology.NewPrefix(); err != nil {
			return nil, err
		}
	}
	tb := &testbed{cfg: cfg, prefix: prefix, logf: logf}
	// Through the output directory opened as a safedir.Dir: no link
	// planted at logs leads it elsewhere.
	if err := safedir.MkdirAllIn("output directory", cfg.OutDir, filepath.Join("logs", tb.prefix), 0o755); err != nil {
		return nil, err
	}
	return tb, nil
}

// topo is the built topology.
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

// logDir is where the run's programs log.
func (tb *testbed) logDir() string { return filepath.Join(tb.cfg.OutDir, "logs", tb.prefix) }

// role is the role named name, its processes in the base leaf (the
// fixtures' and the instruments').
func (tb *testbed) role(name string) *role.Role { return tb.view.Roles[name] }

// onTeardown pushes fn onto the teardown: down runs it before everything
// pushed earlier.
func (tb *testbed) onTeardown(name string, fn func(context.Context) error) { tb.stack.push(name, fn) }

// down tears everything down, newest first, under a fresh context with a
// deadline.
func (tb *testbed) down() error {
	ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
	defer cancel()
	return tb.stack.unwind(ctx)
}

// upHere builds the roles on this host, as a host builds its role: by a
// host op (host.build-switch) carried out on this machine (role.Here),
// the roles handed back by name and reached as any role is. Their
// namespaces and cgroups are this run's, removed by name at teardown.
func (tb *testbed) upHere(ctx context.Context, rec *recorder, spec topology.Spec, dir string) (map[string]*role.Role, topology.LinkFacts, error) {
	t0 := time.Now()
	tb.spec = &spec
	tb.onTeardown("topology", func(context.Context) error { return errors.Join(topology.Clean(tb.prefix)...) })
	root, err := proc.Cgroup2Root()
	if err != nil {
		return nil, topology.LinkFacts{}, err
	}
	tb.tree = role.NewTree(root, tb.prefix)
	tb.onTeardown("cgroups", tb.tree.Remove)
	roles, built, err := role.BuildSwitch(ctx, role.Here, role.RolesOnSwitch{Spec: spec, Dirs: role.Dirs{Log: tb.logDir(), Private: dir}})
	tb.onTeardown("namespace handles", func(context.Context) error {
		var errs []error
		for _, r := range roles {
			errs = append(errs, role.Release(r))
		}
		return errors.Join(errs...)
	})
	if err != nil {
		return nil, built.LinkFacts, err
	}
	rec.setup.topology(spec, tb.prefix, time.Since(t0))
	tb.logf("topology up in %.0f ms: %s", rec.doc.Timings.TopologyUpSec*1000, rec.doc.Env.Topology)
	return roles, built.LinkFacts, nil
}

// up builds the testbed, recording what it built in rec.
func (tb *testbed) up(ctx context.Context, rec *recorder) error {
	dir := privateDir(tb.prefix)
	if err := os.Mkdir(dir, role.PrivateDirMode); err != nil {
		return fmt.Errorf("private directory: %w", err)
	}
	tb.onTeardown("private directory", func(context.Context) error { return removePrivateDir(dir) })
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("private directory: %w", err)
	}

	spec := topology.DefaultSpec(tb.prefix)
	spec.Congestion = tb.cfg.Congestion
	if tb.cfg.NIC == NICOwn {
		spec.Offloads, spec.GSOMaxSegs = true, 0
	}
	if spec.Congestion == "host" {
		spec.Congestion = ""
	}
	var roles map[string]*role.Role
	var machines func() (map[string]metrics.HostReading, error)
	if tb.cfg.Sites.On() {
		t0 := time.Now()
		rs, built, err := tb.upOnHosts(ctx, spec)
		if err != nil {
			return fmt.Errorf("hosts: %w", err)
		}
		rec.setup.hosts(describeHosts(built, tb.cfg.WAN), time.Since(t0))
		roles, machines = rs, hostsNoise(built, tb.prefix)
		rec.setup.machines(readMachines(ctx, hostMachines(built), tb.cfg.Programs, tb.logf))
	} else {
		rs, links, err := tb.upHere(ctx, rec, spec, dir)
		if err != nil {
			return err
		}
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
	tb.view = &transport.Testbed{Prefix: tb.prefix, Roles: roles, Dir: dir, LogDir: tb.logDir(), Logf: tb.logf}
	if tb.cfg.Sites.On() {
		tb.view.Copies = tb.cfg.Sites.Copies()
	}
	fx, err := transport.StartFixtures(ctx, tb.view, tb.cfg.Own)
	if err != nil {
		return err
	}
	tb.view.Fixtures = fx
	tb.onTeardown("server fixtures", func(context.Context) error { return fx.Stop() })

	tb.sampler = &metrics.Sampler{
		Roles:         map[string]func() (uint64, error){},
		ClientRxBytes: meter(roles[topology.Client], role.RxBytes),
		Machines:      machines,
	}
	if tb.tree != nil {
		tb.sampler.Run, tb.sampler.RunCgroup = tb.tree.Usage, tb.tree.Name()
	}
	for name, r := range roles {
		tb.sampler.Roles[name] = meter(r, role.CPUUsec)
	}

	if tb.client.udpBuffer, err = socketBufferLimit(ctx, roles); err != nil {
		return err
	}
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

// meter is a counter of role r as metrics.Sampler reads it: without a
// context, around each sample. A host lost meanwhile fails the read
// through the wire's keepalive (role.Wire.KeepAlive), not a deadline.
func meter(r *role.Role, read func(context.Context, *role.Role) (uint64, error)) func() (uint64, error) {
	return func() (uint64, error) { return read(context.Background(), r) }
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

// forTransport gives a transport its own cgroup in every role, and its
// view of the testbed with those cgroups, so its processes are accounted
// apart from the fixtures and other transports.
func (tb *testbed) forTransport(ctx context.Context, name string) (*transport.Testbed, error) {
	roles, err := role.ForTransport(ctx, tb.view.Roles, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	view := *tb.view
	view.Roles = roles
	return &view, nil
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
