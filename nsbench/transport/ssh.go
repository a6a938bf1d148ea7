package transport

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// SSH is the reference's ceiling: the instruments go straight across the
// bridge to the server's address (scp through one OpenSSH connection).
// Its SSH programs can be chosen (a build: --build b:sshd=PATH): ssh, the
// client scp and the logins run (scp -S), and sshd, a private one on
// sshPrivatePort started with each path, in the transport's cgroup, with
// the fixture sshd's keys and account; unchosen, the system's ssh and the
// shared fixture sshd serve.
type SSH struct {
	ssh, sshd string // chosen programs, "" for the system's
	build     string // the build's label: its sshd's files apart
}

var _ Transport = SSH{}

// sshPrivatePort is the port of Pure SSH's own sshd (privatePorts lists
// every transport's). Two builds of Pure SSH are never up together.
const sshPrivatePort = 2234

var sshSpec = Spec{
	Name:      "ssh",
	Summary:   "Pure SSH: the instruments straight to the server's fixtures (the no-tunnel baseline)",
	InDefault: true,
	Plain:     true,
	Sets:      []string{"seed-002"},
	Options: []Option{
		{Name: "ssh", File: true, Roles: []string{topology.Client}, Usage: "ssh client program of the ssh transport's SSH exchanges (scp -S, the logins; default: ssh on PATH)"},
		{Name: "sshd", File: true, Roles: []string{topology.Server}, Usage: "sshd program of the ssh transport: a private sshd per path instead of the shared fixture's (default: the fixture's, sshd on PATH or /usr/sbin/sshd)"},
	},
	New: func(c Config) (Transport, error) {
		s := SSH{build: c.Build}
		for _, p := range []struct {
			into *string
			name string
		}{{&s.ssh, "ssh"}, {&s.sshd, "sshd"}} {
			if v := c.Options[p.name]; v != "" {
				abs, err := filepath.Abs(v) // sshd re-executes itself: an absolute path
				if err != nil {
					return nil, fmt.Errorf("--%s %s: %w", p.name, v, err)
				}
				*p.into = abs
			}
		}
		return s, nil
	},
}

func (SSH) Name() string  { return "ssh" }
func (SSH) Label() string { return "Pure SSH" }

// Check accepts the chosen programs when they are executable files.
func (s SSH) Check() error {
	var bad []string
	for _, p := range []string{s.ssh, s.sshd} {
		if p == "" {
			continue
		}
		if err := checkExecutable(p); err != nil {
			bad = append(bad, p+": "+err.Error())
		}
	}
	if len(bad) > 0 {
		return &UnavailableError{Transport: "ssh", Reason: strings.Join(bad, "; ")}
	}
	return nil
}

func (SSH) About() string {
	return "is the ceiling: one OpenSSH connection straight from the server's namespace to the client's."
}

// Up aims at the server's fixtures; with a chosen sshd it starts that
// sshd first and aims SSH at it. The chosen programs' versions are facts
// ("ssh", "sshd": what `-V` prints).
func (s SSH) Up(ctx context.Context, tb *Testbed) (*Path, error) {
	p := &Path{
		Target: DirectTarget(tb.Roles[topology.Server].Addr().String()),
		Close:  func() error { return nil },
	}
	if s.ssh != "" {
		cli := tb.Roles[topology.Client]
		p.Target.SSHProgram = tb.ProgramAt(topology.Client, s.ssh)
		p.Facts = append(p.Facts, results.Fact{Key: "ssh", Label: "Pure SSH ssh", Value: sshVersion(ctx, cli, p.Target.SSHProgram)})
	}
	if s.sshd == "" {
		if d := tb.Fixtures.FullRestart(ServiceSSH); d != nil {
			p.Restarts = Restarts{PieceServer: d}
		}
		return p, nil
	}
	sub := "sshd-own"
	if s.build != "" {
		sub += "@" + s.build
	}
	sshd := tb.ProgramAt(topology.Server, s.sshd)
	spec, addr, err := privateSSHDSpec(ctx, tb, sshd, sub, sub, sshPrivatePort,
		// What the fixture sshd serves: scp's SFTP, many logins at once.
		"AllowTcpForwarding yes", "MaxStartups 100:30:200", "Subsystem sftp internal-sftp")
	if err != nil {
		return nil, fmt.Errorf("ssh: %w", err)
	}
	d, err := tb.Start(ctx, topology.Server, spec, addr)
	if err != nil {
		return nil, fmt.Errorf("ssh: %w", err)
	}
	p.Target.Ports[ServiceSSH] = sshPrivatePort
	p.Facts = append(p.Facts, results.Fact{Key: "sshd", Label: "Pure SSH sshd", Value: sshVersion(ctx, tb.Roles[topology.Server], sshd)})
	p.Procs = []RSSProc{tb.Proc(topology.Server, "sshd (own)", d)}
	// Close stops the sshd running then: a restart replaces d.
	p.Restarts = Restarts{PieceServer: &restartable{r: tb.Roles[topology.Server], spec: spec, addr: addr, p: &d, tree: true,
		what: "Pure SSH's own sshd: its listener and every connection's processes"}}
	p.Close = func() error { return stopAll(d) }
	return p, nil
}

// sshVersion is what an OpenSSH program prints for -V ("OpenSSH_9.2p1
// Debian-2+deb12u10, OpenSSL 3.0.19 27 Jan 2026"), to stderr, run in the
// role that runs it (so on that role's host): the line naming OpenSSH (an
// sshd older than 9.x lists it after its usage), else the first line, else
// "".
func sshVersion(ctx context.Context, r *role.Role, bin string) string {
	res, _ := r.Run(ctx, bin, "-V") // an old sshd exits 1
	return parseSSHVersion(string(res.Stderr) + string(res.Stdout))
}

// parseSSHVersion picks the version line out of what -V printed.
func parseSSHVersion(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "OpenSSH") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(lines[0])
}

// DirectTarget aims at the fixtures' own ports on host, over a path that
// carries packets.
func DirectTarget(host string) Target {
	return Target{Host: host, Ports: FixturePorts(), Carries: CarriesPackets}
}
