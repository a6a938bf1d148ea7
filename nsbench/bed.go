package nsbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/fanout"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/residue"
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
	OutDir string
	// Network is the roles' congestion control ("host" keeps the host's
	// default) and interface settings.
	Network
	Own     []transport.Service // twnsbench's own servers an instrument needs (many-rr, rpm); the others are not started
	Payload int64               // bytes of the scp payload; 0: no instrument copies it, and none is written
	Warm    int64               // bytes of the warm-up copy
	// Programs are the run's transports' own programs by role
	// (transport.ProgramsByRole): each machine states their versions
	// with its facts, beside the harness's own.
	Programs map[string][]preflight.Tool
	Duration time.Duration // of each instrument's measurement
	Sites    *Sites        // roles on other hosts, reached; nil: all on this one
	// WAN says a WAN condition will impair the roles: across hosts each
	// stands behind an edge (topology.LinkSpec.Edge).
	WAN bool
	// Clients makes the testbed one of the many-client sweep's: N
	// clients beside the server; zero: the reference's roles.
	Clients fanout.Shape
}

// bed is what every testbed stands on, a run's, the self-check's and each
// of the many-client sweep's: the log directory, the private directory
// with its owner file, the roles on their switch here (topology and
// cgroups) or on the hosts, the server fixtures, and the teardown stack
// that undoes them, newest first. Its undo order:
//
//	what was built on it (paths, servers) → fixtures → payload tmpfs →
//	namespace handles → cgroups → topology → private directory
type bed struct {
	cfg    testbedConfig
	prefix string
	logf   Logf
	stack  undoStack
	spec   *topology.Spec     // of the switch on this host; nil until up built it (and across hosts)
	view   *transport.Testbed // nil until the fixtures started
	tree   *role.Tree         // the run's cgroups; nil across hosts
	hosted []hostedRole       // the roles on hosts, as built; nil on this host
}

// newBed names a new testbed and makes its log directory; nothing else
// exists until it is built.
func newBed(cfg testbedConfig, logf Logf) (*bed, error) {
	var prefix string
	if cfg.Sites.On() && cfg.Clients.Clients == 0 {
		prefix = cfg.Sites.Prefix() // the hosts' copies and agents are named for it
	} else {
		// On one host; or one of the sweep's testbeds, with agents of its
		// own named for it on the sweep's sites (bedAgents).
		var err error
		if prefix, err = topology.NewPrefix(); err != nil {
			return nil, err
		}
	}
	b := &bed{cfg: cfg, prefix: prefix, logf: logf}
	// Through the output directory opened as a safedir.Dir: no link
	// planted at logs leads it elsewhere.
	if err := safedir.MkdirAllIn("output directory", cfg.OutDir, filepath.Join("logs", b.prefix), 0o755); err != nil {
		return nil, err
	}
	return b, nil
}

// upClients builds one of the many-client sweep's testbeds (cfg.Clients)
// up to its server fixtures, as fanout.UpBed; on failure it has torn down
// what it built. Its condition is its caller's to set.
func upClients(ctx context.Context, cfg testbedConfig, logf Logf) (sweepBed, error) {
	b, err := newBed(cfg, logf)
	if err != nil {
		return sweepBed{}, err
	}
	dir, err := b.privateDir()
	if err == nil {
		var roles map[string]*role.Role
		if roles, err = b.upRoles(ctx, dir); err == nil {
			err = b.startFixtures(ctx, roles, dir)
		}
	}
	if err != nil {
		return sweepBed{}, errors.Join(err, b.down())
	}
	return sweepBed{b: b}, nil
}

// upRoles builds a sweep's testbed's roles on this host, or across hosts
// each by an agent of its own on the host that holds it (bedAgents),
// ended at teardown, once the roles' logs are fetched.
func (b *bed) upRoles(ctx context.Context, dir string) (map[string]*role.Role, error) {
	spec := b.switchSpec()
	if !b.cfg.Sites.On() {
		roles, _, err := b.upHere(ctx, spec, dir)
		return roles, err
	}
	rs, closeAgents, err := b.cfg.Sites.bedAgents(b.prefix, spec)
	if err != nil {
		return nil, fmt.Errorf("hosts: %w", err)
	}
	b.onTeardown("the testbed's agents on the hosts", closeAgents)
	roles, _, err := b.upOnHosts(ctx, spec, rs)
	if err != nil {
		return nil, fmt.Errorf("hosts: %w", err)
	}
	return roles, nil
}

// privateDir makes the run's private directory with its owner file, by
// which clean tells a live run from a dead one's leftovers.
func (b *bed) privateDir() (string, error) {
	dir := privateDir(b.prefix)
	if err := os.Mkdir(dir, role.PrivateDirMode); err != nil {
		return "", fmt.Errorf("private directory: %w", err)
	}
	b.onTeardown("private directory", func(context.Context) error { return removePrivateDir(dir) })
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return "", fmt.Errorf("private directory: %w", err)
	}
	return dir, nil
}

// switchSpec is the topology of the roles: the reference's, or the
// sweep's N clients beside the server (fanout.Shape), with the run's
// congestion control and interface settings.
func (b *bed) switchSpec() topology.Spec {
	spec := topology.DefaultSpec(b.prefix)
	if b.cfg.Clients.Clients > 0 {
		spec = b.cfg.Clients.Spec(b.prefix)
	}
	spec.Congestion = b.cfg.Congestion
	if b.cfg.NIC == NICOwn {
		spec.Offloads, spec.GSOMaxSegs = true, 0
	}
	if spec.Congestion == "host" {
		spec.Congestion = ""
	}
	return spec
}

// upHere builds the roles on this host, as a host builds its role: by a
// host op (host.build-switch) carried out on this machine (role.Here),
// the roles handed back by name and reached as any role is. Their
// namespaces and cgroups are this run's, removed by name at teardown.
func (b *bed) upHere(ctx context.Context, spec topology.Spec, dir string) (map[string]*role.Role, topology.LinkFacts, error) {
	b.spec = &spec
	b.onTeardown("topology", func(context.Context) error { return errors.Join(topology.Clean(b.prefix)...) })
	root, err := proc.Cgroup2Root()
	if err != nil {
		return nil, topology.LinkFacts{}, err
	}
	b.tree = role.NewTree(root, b.prefix)
	b.onTeardown("cgroups", b.tree.Remove)
	roles, built, err := role.BuildSwitch(ctx, role.Here, role.RolesOnSwitch{Spec: spec, Dirs: role.Dirs{Log: b.logDir(), Private: dir}})
	b.onTeardown("namespace handles", func(context.Context) error {
		var errs []error
		for _, r := range roles {
			errs = append(errs, role.Release(r))
		}
		return errors.Join(errs...)
	})
	if err != nil {
		return nil, built.LinkFacts, err
	}
	return roles, built.LinkFacts, nil
}

// startFixtures starts the server fixtures on roles and makes the
// testbed's view of them, each role on its CPUs (--pin) from here on: the
// fixtures, every transport's processes and every tool.
func (b *bed) startFixtures(ctx context.Context, roles map[string]*role.Role, dir string) error {
	pin, err := hostPinLayout(b.cfg.Pin)
	if err != nil {
		return err
	}
	roles = pin.apply(roles)
	b.view = &transport.Testbed{Prefix: b.prefix, Roles: roles, Dir: dir, LogDir: b.logDir(), Logf: b.logf}
	if b.cfg.Sites.On() {
		b.view.Copies = b.cfg.Sites.Copies()
		// The sweep's clients run what the client's host has.
		if c := b.view.Copies[topology.Client]; c != nil {
			for _, name := range fanout.ClientRoles(b.cfg.Clients.Clients) {
				b.view.Copies[name] = c
			}
		}
	}
	fx, err := transport.StartFixtures(ctx, b.view, b.cfg.Own)
	if err != nil {
		return err
	}
	b.view.Fixtures = fx
	b.onTeardown("server fixtures", func(context.Context) error { return fx.Stop() })
	return nil
}

// logDir is where the run's programs log.
func (b *bed) logDir() string { return filepath.Join(b.cfg.OutDir, "logs", b.prefix) }

// role is the role named name, its processes in the base leaf (the
// fixtures' and the instruments').
func (b *bed) role(name string) *role.Role { return b.view.Roles[name] }

// onTeardown pushes fn onto the teardown: down runs it before everything
// pushed earlier.
func (b *bed) onTeardown(name string, fn func(context.Context) error) { b.stack.push(name, fn) }

// down tears everything down, newest first, under a fresh context with a
// deadline.
func (b *bed) down() error {
	ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
	defer cancel()
	return b.stack.unwind(ctx)
}

// forTransport gives a transport its own cgroup in every role, and its
// view of the testbed with those cgroups, so its processes are accounted
// apart from the fixtures and other transports.
func (b *bed) forTransport(ctx context.Context, name string) (*transport.Testbed, error) {
	roles, err := role.ForTransport(ctx, b.view.Roles, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	view := *b.view
	view.Roles = roles
	return &view, nil
}

// residue names what of the testbed is still there after down, of every
// kind a run creates (package residue): namespaces, links, cgroups,
// mounts, processes, files, WireGuard sockets.
func (b *bed) residue() []string {
	var left []string
	for _, o := range residue.Find(b.prefix) {
		left = append(left, o.String())
	}
	return left
}

// sweepBed is a bed as the many-client sweep stands on it (fanout.Bed),
// with the WAN condition set on it; imp is nil on the LAN.
type sweepBed struct {
	b   *bed
	imp fanout.Impaired
}

var _ fanout.Bed = sweepBed{}

func (s sweepBed) View() *transport.Testbed { return s.b.view }
func (s sweepBed) OnTeardown(name string, fn func(context.Context) error) {
	s.b.onTeardown(name, fn)
}
func (s sweepBed) Down() error               { return s.b.down() }
func (s sweepBed) Residue() []string         { return s.b.residue() }
func (s sweepBed) Impaired() fanout.Impaired { return s.imp }
