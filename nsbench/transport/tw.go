package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/relay"
)

// TW is the product's real path: tw client connect in the client role, the
// relay (Caddy, Xray, sshd) assembled in the relay role, tw server start in
// the server role, provisioned with tw's own offline commands
// (tw_provision.go). The instruments aim at the client's loopback ports,
// which tw maps to the server's fixtures. Each role's files live in its
// own directory (Role.Dir()/tw) and reach it through the role, so each
// role may be on a machine of its own.
//
// Up builds in this order and Close undoes it in reverse:
//
//	PKI of the run → provisioning (server join, harness's join response,
//	user, export, client import) → relay → tw server start (ready when its
//	reverse tunnel listens on the relay) → tw client connect (ready when
//	127.0.0.1:18022 accepts and an SSH handshake passes through it)
type TW struct {
	Bin   string // tw; "" looks it up on PATH
	Caddy string // caddy ≥ 2.8; "" looks it up on PATH
	Xray  string // xray; "" looks it up on PATH

	// bins are the programs once found and checked: Check, Prepare and
	// every condition's Up use them (a check runs eight tw, Caddy and
	// Xray commands; inside Up it would count in time to ready).
	bins *twBins
	// enrolled is the run's enrolment, made once and reused by every
	// condition's Up.
	enrolled *twEnrolled
	// sub is tw's directory in each role's (Role.Dir()/sub): "tw", or
	// "tw@LABEL" for a build, whose enrolment is its own.
	sub string
}

// twEnrolled is what a run keeps of tw between its conditions: the tenant
// its enrolment made (tw refuses to create a user twice) and the relay's
// sshd host key (a tw server pins it on its first connection). The tw
// configurations themselves stay in the client's and the server's
// directories.
type twEnrolled struct {
	prefix  string // the run's (Testbed.Prefix)
	tenant  relay.Tenant
	hostKey []byte
}

var _ Transport = (*TW)(nil)

// The client's local ports, as the reference maps them (client:server).
const (
	TWSSHPort         = 18022
	TWIPerf3Port      = 18201
	TWNetperfPort     = 18865
	TWNetperfDataPort = NetperfDataPort // mapped to itself: netperf pins it
	TWManyRRPort      = 18870
	TWRPMPort         = 18871
)

var twMaps = [][2]int{
	{TWSSHPort, SSHPort},
	{TWIPerf3Port, IPerf3Port},
	{TWNetperfPort, NetperfPort},
	{TWNetperfDataPort, NetperfDataPort},
	{TWManyRRPort, ManyRRPort},
	{TWRPMPort, RPMPort},
}

const (
	twRelayHost = "relay.tw.test"
	// twRemotePort is the server's reverse-forward port on the relay: the
	// first one tw's own enrollment allocates.
	twRemotePort = 20000
	twRelayUser  = "twrelay" // the relay account of the server's reverse tunnel
	twReadyWait  = 90 * time.Second
)

// twServerPorts are the ports tw's server listens on in the server's
// namespace by its defaults: its SSH server (server.ssh_port, 2222) and
// its Xray inbound (ssh_port + 1). Transports up beside tw keep off them.
var twServerPorts = []int{2222, 2223}

// privatePorts are the ports the transports' own daemons listen on in the
// server's namespace, where every transport of a run is up together under
// a condition: ssh-tun's and sshuttle's private sshds, Pure SSH's own
// sshd for a build. They were 2222–2224 until sshuttle's 2223 took tw's
// Xray port and every tw row of a run with sshuttle failed to start.
var privatePorts = map[string]int{"ssh-tun": sshTunPort, "sshuttle": sshuttleSSHPort, "ssh": sshPrivatePort}

var twSpec = Spec{
	Name:      "tw",
	Summary:   "SSH over Tunnel Whisperer: the real tw client and server and a relay of Caddy, Xray and sshd (bring the binaries)",
	InDefault: true,
	Options: []Option{
		{Name: "tw", File: true, Roles: []string{topology.Client, topology.Server}, Usage: "tw binary for the tw transport (default: tw on PATH); build it from Tunnel Whisperer's source"},
		{Name: "caddy", File: true, Roles: []string{topology.Relay}, Usage: "Caddy ≥ 2.8 for the tw relay (default: caddy on PATH); see scripts/install-relay-tools.sh"},
		{Name: "xray", File: true, Roles: []string{topology.Relay}, Usage: "Xray for the tw relay (default: xray on PATH); see scripts/install-relay-tools.sh"},
	},
	New: func(c Config) (Transport, error) {
		t := &TW{Bin: c.Options["tw"], Caddy: c.Options["caddy"], Xray: c.Options["xray"], sub: "tw"}
		if c.Build != "" {
			// Two builds enrol apart: tw refuses a user that exists.
			t.sub += "@" + c.Build
		}
		return t, nil
	},
}

func (TW) Name() string  { return twSpec.Name }
func (TW) Label() string { return "SSH over Tunnel Whisperer" }

// NeedsRoles: the relay carries the path (Caddy, Xray and its sshd).
func (TW) NeedsRoles() []string { return []string{topology.Relay} }
func (TW) About() string {
	return "is the real product path through the relay namespace. For scp that is SSH inside tw's own end-to-end SSH inside TLS; the iperf3 rows have no inner OpenSSH and are tw's own ceiling."
}

// Check finds tw, Caddy, Xray and sshd, checks their versions and that tw
// has the offline provisioning commands. It starts only the programs'
// version and help output.
func (t *TW) Check() error {
	_, err := t.resolve()
	return err
}

// twBins are the resolved programs and what they said about themselves.
type twBins struct {
	tw, caddy, xray, sshd string
	twVersion             string // `tw --version`
	caddyVersion          string
	xrayVersion           string
}

// resolve finds every program and collects everything missing into one
// *UnavailableError; what it found is kept for the run.
func (t *TW) resolve() (*twBins, error) {
	if t.bins != nil {
		return t.bins, nil
	}
	b := &twBins{}
	var reasons, fixes []string
	missing := func(reason, fix string) {
		reasons = append(reasons, reason)
		if fix != "" && !slices.Contains(fixes, fix) {
			fixes = append(fixes, fix)
		}
	}
	const twFix = "build tw from the Tunnel-Whisperer repository (make build writes bin/tw) and pass --tw PATH"
	var err error
	if b.tw, err = lookPath(t.Bin, "tw", "--tw"); err != nil {
		missing(err.Error(), twFix)
	} else if b.twVersion, err = twVersion(b.tw); err != nil {
		missing(err.Error(), twFix)
	} else if err = twOfflineFlow(b.tw, b.twVersion); err != nil {
		missing(err.Error(), "use a tw release that has `tw server join-relay --apply` (v2.0.x)")
	}
	if b.caddy, err = lookPath(t.Caddy, "caddy", "--caddy"); err == nil {
		b.caddyVersion, err = relay.CaddyVersion(b.caddy)
	}
	if err != nil {
		missing(err.Error(), relay.InstallHint)
	}
	if b.xray, err = lookPath(t.Xray, "xray", "--xray"); err == nil {
		b.xrayVersion, err = relay.XrayVersion(b.xray)
	}
	if err != nil {
		missing(err.Error(), relay.InstallHint)
	}
	if _, err = systemProgram("sshd"); err != nil {
		missing(err.Error(), "install openssh-server")
	}
	b.sshd = "sshd" // the relay's host finds its own
	if len(reasons) > 0 {
		return nil, &UnavailableError{Transport: "tw", Reason: strings.Join(reasons, "; "), Fix: strings.Join(fixes, "; ")}
	}
	t.bins = b
	return b, nil
}

// lookPath resolves an explicit path or a name on PATH to an absolute path.
func lookPath(explicit, name, flag string) (string, error) {
	p, where := explicit, flag+" "+explicit
	if p == "" {
		p, where = name, "PATH"
	}
	found, err := exec.LookPath(p)
	if err != nil {
		return "", fmt.Errorf("%s not found (%s)", name, where)
	}
	return filepath.Abs(found)
}

var _ Preparer = (*TW)(nil)

// subDir is tw's directory in each role's directory.
func (t *TW) subDir() string {
	if t.sub == "" {
		return "tw"
	}
	return t.sub
}

// Prepare enrols the tw server and client once for the run (tw's offline
// provisioning); Up reuses the enrolment under every condition.
func (t *TW) Prepare(ctx context.Context, tb *Testbed) error {
	b, err := t.resolve()
	if err != nil {
		return err
	}
	u := &twUp{tb: tb, bins: b, sub: t.subDir()}
	if err := u.newPKI(ctx); err != nil {
		return err
	}
	_, err = t.enrolment(ctx, u)
	return err
}

func (t *TW) Up(ctx context.Context, tb *Testbed) (path *Path, err error) {
	b, err := t.resolve()
	if err != nil {
		return nil, err
	}
	u := &twUp{tb: tb, bins: b, sub: t.subDir()}
	defer func() {
		if err != nil {
			err = errors.Join(err, u.close())
		}
	}()
	if err := u.newPKI(ctx); err != nil {
		return nil, err
	}
	e, err := t.enrolment(ctx, u)
	if err != nil {
		return nil, err
	}
	tb.Logf("%s: starting the relay (Caddy %s, %s, sshd) for server %s", t.Label(), b.caddyVersion, b.xrayVersion, e.tenant.ServerID)
	rl := &twRelay{u: u, cfg: relay.Config{
		Domain:   twRelayHost,
		Dir:      u.dir(topology.Relay),
		SSHUser:  twRelayUser,
		Tenant:   e.tenant,
		LeafCert: u.pki.leafCert,
		LeafKey:  u.pki.leafKey,
		HostKey:  e.hostKey,
	}, bins: relay.Bins{Caddy: tb.ProgramAt(topology.Relay, b.caddy), Xray: tb.ProgramAt(topology.Relay, b.xray), SSHD: b.sshd}}
	if err := rl.Start(ctx); err != nil {
		return nil, err
	}
	if err := u.startServer(ctx); err != nil {
		return nil, err
	}
	if err := u.startClient(ctx); err != nil {
		return nil, err
	}
	return &Path{
		Target: Target{
			Host: "127.0.0.1",
			Ports: map[Service]int{
				ServiceSSH: TWSSHPort, ServiceIPerf3: TWIPerf3Port,
				ServiceNetperf: TWNetperfPort, ServiceNetperfData: TWNetperfDataPort,
				ServiceManyRR: TWManyRRPort, ServiceRPM: TWRPMPort,
			},
			Carries: CarriesTCP, // tw forwards TCP ports only
		},
		Facts: results.Facts{
			{Key: twSpec.Name, Label: "tw", Value: b.twVersion},
			{Key: "relay", Label: "tw relay", Value: fmt.Sprintf("Caddy %s, %s, OpenSSH sshd; provisioned with tw server join-relay (offline)", b.caddyVersion, b.xrayVersion)},
		},
		Procs:    u.procs(),
		Restarts: Restarts{PieceServer: twServer{u}, PieceRelay: rl},
		Close:    u.close,
	}, nil
}

// twUp is one tw path being built or running.
type twUp struct {
	tb   *Testbed
	bins *twBins
	sub  string // tw's directory in each role's (TW.sub)
	// pki is where the run's TLS files are: the CA's in the client's and
	// the server's directories (newPKI), the leaf's in the relay's.
	pki    twPKI
	relay  *relay.Relay
	server *proc.Process
	client *proc.Process
	extra  [][2]int // maps beyond twMaps: a relay's many clients' own ports

	closeOnce sync.Once
	closeErr  error
}

// close stops the client, the server and the relay, in that order. Safe
// to call twice.
func (u *twUp) close() error {
	u.closeOnce.Do(func() {
		errs := []error{stopAll(u.client, u.server)}
		if u.relay != nil {
			errs = append(errs, u.relay.Stop())
		}
		u.closeErr = errors.Join(errs...)
	})
	return u.closeErr
}

func (u *twUp) procs() []RSSProc {
	ps := []RSSProc{
		u.tb.Proc(topology.Client, "tw client connect", u.client),
		u.tb.Proc(topology.Server, "tw server start", u.server),
	}
	for _, p := range u.relay.Procs() {
		ps = append(ps, RSSProc{Key: p.Key, PID: p.PID, Role: u.tb.Roles[topology.Relay]})
	}
	return ps
}

// startServer starts tw server start and waits for its reverse tunnel: the
// relay sshd's forward of the server's remote port listening on the
// relay's loopback.
func (u *twUp) startServer(ctx context.Context) error {
	spec := u.twSpec(topology.Server, "tw-server", "server", "start")
	p, err := u.tb.Roles[topology.Server].Start(ctx, spec)
	if err != nil {
		return err
	}
	u.server = p
	ctx, cancel := context.WithTimeout(ctx, twReadyWait)
	defer cancel()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(twRemotePort))
	if err := u.tb.Roles[topology.Relay].WaitTCP(ctx, addr, p); err != nil {
		return fmt.Errorf("tw server start: reverse tunnel not up on the relay (log: %s): %w", spec.Log, err)
	}
	return nil
}

// startClient starts tw client connect, waits for its SSH port and then
// for an SSH handshake with the server's sshd through the whole path.
func (u *twUp) startClient(ctx context.Context) error {
	p, err := u.startClientIn(ctx, topology.Client)
	if p != nil {
		u.client = p
	}
	return err
}

// startClientIn is startClient in client role name (one of a relay's many
// clients); the process comes back, started, even when the handshake
// failed, for the caller to stop.
func (u *twUp) startClientIn(ctx context.Context, name string) (*proc.Process, error) {
	ctx, cancel := context.WithTimeout(ctx, twReadyWait)
	defer cancel()
	spec := u.twSpec(name, "tw-client", "client", "connect")
	p, err := u.tb.Start(ctx, name, spec, net.JoinHostPort("127.0.0.1", strconv.Itoa(TWSSHPort)))
	if err != nil {
		return nil, err
	}
	cli := u.tb.Roles[name]
	argv := append([]string{"ssh"}, u.tb.Fixtures.ClientOptions()...)
	ssh := cli.Program("tw-ready-ssh", append(argv, "-p", strconv.Itoa(TWSSHPort),
		"-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10",
		BenchUser+"@127.0.0.1", "true")...)
	var last error
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		res, err := cli.RunProgram(ctx, ssh)
		if err == nil {
			return p, nil
		}
		last = fmt.Errorf("%v: %s", err, strings.TrimSpace(string(res.Stderr)))
		select {
		case <-ctx.Done():
			return p, fmt.Errorf("tw client connect: no SSH handshake through the tunnel (logs: %s, %s): %w", spec.Log, ssh.Log, last)
		case <-p.Done():
			return p, fmt.Errorf("tw client connect exited: %v (log: %s)", p.Err(), spec.Log)
		case <-time.After(delay):
		}
	}
}

// roleLauncher starts the relay's programs and writes its files through
// the Testbed in one role.
type roleLauncher struct {
	tb   *Testbed
	role string
}

func (l roleLauncher) Program(name string, argv ...string) proc.Program {
	return l.tb.Program(l.role, name, argv...)
}

func (l roleLauncher) Start(ctx context.Context, spec proc.Program, addr string) (*proc.Process, error) {
	return l.tb.Start(ctx, l.role, spec, addr)
}

func (l roleLauncher) Run(ctx context.Context, spec proc.Program) (proc.Result, error) {
	return l.tb.Roles[l.role].RunProgram(ctx, spec)
}

func (l roleLauncher) WriteFile(ctx context.Context, path string, data []byte, perm os.FileMode) error {
	return role.WriteFile(ctx, l.tb.Roles[l.role], path, data, perm)
}

func (l roleLauncher) MkdirAll(ctx context.Context, path string, perm os.FileMode) error {
	return role.MkdirAll(ctx, l.tb.Roles[l.role], path, perm)
}

// Account makes the relay's login account on the relay's host (an op).
func (l roleLauncher) Account(ctx context.Context, dir, user string) ([]ns.Mount, error) {
	return sshdAccount.On(ctx, l.tb.Roles[l.role], sshdAccountArgs{Dir: dir, User: user})
}
