package transport

import (
	"context"
	"errors"
	"fmt"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// Sshuttle is seed 002's sshuttle (1.1.1, --method nft): a transparent
// proxy for TCP. In the client namespace an nft rule redirects connections
// to the target subnet to sshuttle's local listener; sshuttle multiplexes
// them over one SSH connection (its own ssh child) to a python server that
// a private sshd starts in the server role, which opens the real
// connections there. It carries TCP only: no ICMP, no UDP.
type Sshuttle struct {
	version string // sshuttle --version, read once by Prepare
}

// Addressing. sshuttle's own SSH connection goes to the server's bridge
// address, so it must not be in the subnet sshuttle captures (its rule
// would redirect its own connection). The instruments therefore aim at a
// separate address, sshuttleTarget, on the server's loopback, where the
// fixtures answer (they listen on every address). The client reaches it
// only through sshuttle: its route there is via its own loopback, which
// passes connect()'s routing lookup (so the nft output hook sees the SYN
// and sshuttle's rule redirects it) but delivers nothing by itself (the
// SYN loops back, is not local, and is dropped). Tried first: a blackhole,
// unreachable or missing route fails connect() before netfilter sees the
// packet (EINVAL, EHOSTUNREACH, ENETUNREACH), and this kernel has no dummy
// links. On top, sshuttleGuard resets what sshuttle did not redirect, so
// such a connection fails at once ("connection refused") instead of
// timing out: readiness is seen within milliseconds, not after a 500 ms
// dial timeout that would inflate time to ready, and a tool whose
// sshuttle died fails loudly instead of hanging.
var sshuttleTarget = innerAddr("sshuttle", 1)

// sshuttleGuard is the client's nft table behind sshuttle's: a filter at
// output priority 0 runs after sshuttle's nat redirect (priority -100), so
// it sees only packets still addressed to sshuttleTarget, the ones
// sshuttle did not capture.
const (
	sshuttleGuardTable = "twnsb-sshuttle"
	// Added then deleted first, so that loading it twice (a condition
	// after a failed close) leaves one copy: nft 1.0.6 has no "destroy".
	sshuttleGuard = `table ip ` + sshuttleGuardTable + `
delete table ip ` + sshuttleGuardTable + `
table ip ` + sshuttleGuardTable + ` {
	chain output {
		type filter hook output priority filter; policy accept;
		ip daddr %[1]s meta l4proto tcp reject with tcp reset
		ip daddr %[1]s reject
	}
}
`
)

const (
	sshuttleSSHPort = 2233 // its private sshd (privatePorts)
	sshuttleReady   = time.Minute
)

var sshuttleSpec = Spec{
	Name:    "sshuttle",
	Summary: "SSH over sshuttle (nft method): TCP only, relayed by python at both ends of one SSH connection",
	Sets:    []string{"seed-002"},
	New:     func(Config) (Transport, error) { return &Sshuttle{}, nil },
}

func (*Sshuttle) Name() string  { return "sshuttle" }
func (*Sshuttle) Label() string { return "SSH over sshuttle (nft)" }
func (*Sshuttle) About() string {
	return "is sshuttle's transparent TCP proxy: an nft rule hands each connection to a python client that multiplexes it over one ssh connection to a python server behind a private sshd; the client's sshuttle, its firewall helper and ssh, the server's sshd and python are all in the transport's cgroups."
}

func (t *Sshuttle) Check() error {
	var missing []string
	for _, p := range []string{"sshuttle", "python3", "nft", "ssh", "sshd"} {
		if _, err := systemProgram(p); err != nil {
			missing = append(missing, err.Error())
		}
	}
	if len(missing) > 0 {
		return &UnavailableError{Transport: t.Name(), Reason: strings.Join(missing, "; "),
			Fix: "install sshuttle, nftables, openssh-client and openssh-server (scripts/install-deps.sh)"}
	}
	return nil
}

// Prepare reads sshuttle's version once, outside the time-to-ready window
// (starting python takes a few hundred ms), in the client, whose host runs
// it (across hosts, not necessarily this one).
func (t *Sshuttle) Prepare(ctx context.Context, tb *Testbed) error {
	res, err := tb.Roles[topology.Client].Run(ctx, "sshuttle", "--version")
	if err != nil {
		return fmt.Errorf("sshuttle --version: %v: %s", err, strings.TrimSpace(string(res.Stdout)+string(res.Stderr)))
	}
	t.version = strings.TrimSpace(string(res.Stdout) + string(res.Stderr))
	return nil
}

func (t *Sshuttle) Up(ctx context.Context, tb *Testbed) (path *Path, err error) {
	ctx, cancel := context.WithTimeout(ctx, sshuttleReady)
	defer cancel()
	u := &sshuttleUp{tb: tb, dir: "sshuttle"}
	defer func() {
		if err != nil {
			err = errors.Join(err, u.close())
		}
	}()
	if err := u.addressing(ctx); err != nil {
		return nil, err
	}
	if u.server, err = privateSSHD(ctx, tb, "", u.dir, "sshd-sshuttle", sshuttleSSHPort); err != nil {
		return nil, fmt.Errorf("sshuttle: %w", err)
	}
	bin := "sshuttle" // the client's host finds its own
	// -v on ssh: its key exchange report (kexLine) reaches sshuttle's log.
	sshCmd := strings.Join(append(append([]string{"ssh", "-v"}, tb.Fixtures.ClientOptions()...),
		"-o", "BatchMode=yes", "-o", "ServerAliveInterval=15"), " ")
	// sshuttle's other defaults stay, as the seed ran it: latency control
	// on (it caps throughput under WAN RTT), IPv6 rules added too.
	cli := tb.Roles[topology.Client]
	spec := cli.Program("sshuttle", bin, "--method", "nft",
		"-r", BenchUser+"@"+net.JoinHostPort(tb.Roles[topology.Server].Addr().String(), strconv.Itoa(sshuttleSSHPort)),
		"-e", sshCmd, sshuttleTarget.String()+"/32")
	// No READY=1 to a systemd unit the harness may run under.
	spec.Env = append(spec.Env, "NOTIFY_SOCKET=")
	spec.Mounts = append(spec.Mounts, hideResolvers()...)
	if u.client, err = cli.Start(ctx, spec); err != nil {
		return nil, err
	}
	// Ready once the fixture sshd answers through the redirect: sshuttle
	// logs "Connected to server." before its firewall helper adds the
	// rule, and without the rule this connect is refused (see
	// sshuttleTarget), so success means the rule is in place.
	if err := cli.WaitTCP(ctx, net.JoinHostPort(sshuttleTarget.String(), strconv.Itoa(SSHPort)), u.client); err != nil {
		return nil, fmt.Errorf("sshuttle: sshd through sshuttle (log: %s): %w", spec.Log, err)
	}
	label := t.Label()
	facts := results.Facts{{Key: sshuttleSpec.Name, Label: "sshuttle", Value: t.version}}
	if log, err := role.ReadFile(ctx, cli, spec.Log); err == nil {
		if m := lastSubmatch(kexLine, log); m != nil {
			suite := m[1]
			if m[2] != "<implicit>" {
				suite += "/" + m[2]
			}
			label = "SSH over sshuttle (nft, " + suite + ")"
			facts = append(facts, results.Fact{Key: "sshuttle ssh cipher", Value: suite})
		}
	}
	return &Path{
		Target:  Target{Host: sshuttleTarget.String(), Ports: FixturePorts(), Carries: CarriesTCP},
		Facts:   facts,
		Label:   label,
		Procs:   u.procs(ctx),
		Carried: u.carried,
		Close:   u.close,
	}, nil
}

type sshuttleUp struct {
	tb                 *Testbed
	dir                string // its directory's name in each role's directory
	client, server     *proc.Process
	addr, route, guard bool // what addressing added, for close
	once               sync.Once
	err                error
}

// addressing puts sshuttleTarget on the server's loopback, routes it via
// the client's and loads sshuttleGuard (see sshuttleTarget).
func (u *sshuttleUp) addressing(ctx context.Context) error {
	if err := role.AddLoopback(ctx, u.tb.Roles[topology.Server], sshuttleTarget); err != nil {
		return fmt.Errorf("sshuttle: server address %s: %w", sshuttleTarget, err)
	}
	u.addr = true
	if _, err := sshuttleRouteOp.On(ctx, u.tb.Roles[topology.Client], u.loRoute()); err != nil {
		return fmt.Errorf("sshuttle: client route to %s: %w", sshuttleTarget, err)
	}
	u.route = true
	cli := u.tb.Roles[topology.Client]
	dir := filepath.Join(cli.Dir(), u.dir)
	if err := role.MkdirAll(ctx, cli, dir, 0o755); err != nil {
		return fmt.Errorf("sshuttle: %w", err)
	}
	guard := filepath.Join(dir, "guard.nft")
	if err := role.WriteFile(ctx, cli, guard, []byte(fmt.Sprintf(sshuttleGuard, sshuttleTarget)), 0o644); err != nil {
		return fmt.Errorf("sshuttle: %w", err)
	}
	u.guard = true
	_, err := u.nft(ctx, "-f", guard)
	return err
}

// nft runs nft in the client namespace and returns its output.
func (u *sshuttleUp) nft(ctx context.Context, args ...string) (string, error) {
	cli := u.tb.Roles[topology.Client]
	res, err := cli.RunProgram(ctx, cli.Program("sshuttle-nft", append([]string{"nft"}, args...)...))
	if err != nil {
		return "", fmt.Errorf("sshuttle: nft %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(res.Stderr)))
	}
	return string(res.Stdout), nil
}

// loRoute is the client's route to sshuttleTarget, via its lo. Its
// source is the client's own address, the one a connection to the server
// would have.
func (u *sshuttleUp) loRoute() loRoute {
	return loRoute{Dst: sshuttleTarget, Src: u.tb.Roles[topology.Client].Addr()}
}

// carried is the proof that the instruments' traffic crossed sshuttle:
// the payload bytes of sshuttle's one SSH connection, both ways, as the
// client's kernel counts them (tcpi_bytes_received + tcpi_bytes_acked
// through sock_diag). Every byte sshuttle relays crosses it once, with
// SSH's and sshuttle's framing added; a connection that bypassed sshuttle
// adds nothing. /proc/PID/io of the python client was the other
// candidate, but it counts every relayed byte twice (read from the
// application's socket, written to ssh), which would hide a partial
// bypass.
func (u *sshuttleUp) carried() (int64, error) {
	server := u.tb.Roles[topology.Server].Addr()
	total, err := sshuttleBytesOp.On(context.Background(), u.tb.Roles[topology.Client], netip.AddrPortFrom(server, sshuttleSSHPort))
	if err != nil {
		return 0, fmt.Errorf("sshuttle bytes: %w", err)
	}
	return total, nil
}

// procs names the processes that carry the data, for the memory table:
// sshuttle's children (its firewall helper and ssh) and the server's sshd
// session and python have PIDs of their own. A process not found is left
// out.
func (u *sshuttleUp) procs(ctx context.Context) []RSSProc {
	cli := u.tb.Roles[topology.Client]
	ps := []RSSProc{{Key: "client / sshuttle", PID: u.client.PID(), Role: cli}}
	for role, ts := range u.descendants(ctx) {
		for _, t := range ts {
			argv := t.Argv
			if len(argv) == 0 {
				continue
			}
			key := ""
			switch {
			case role == topology.Client && slices.Contains(argv, "--firewall"):
				key = "client / sshuttle --firewall"
			case role == topology.Client && filepath.Base(argv[0]) == "ssh":
				key = "client / ssh"
			case role == topology.Server && strings.HasPrefix(argv[0], "sshd: "+BenchUser+"@"):
				key = "server / sshd" // the session's unprivileged half, which carries the data
			case role == topology.Server && strings.HasPrefix(filepath.Base(argv[0]), "python"):
				key = "server / python3"
			}
			if key != "" {
				ps = append(ps, RSSProc{Key: key, PID: t.PID, Role: u.tb.Roles[role]})
			}
		}
	}
	return ps
}

// hideResolvers returns mounts that put /dev/null (not executable) over
// resolvectl and systemd-resolve for sshuttle and its children: its
// firewall helper runs `resolvectl flush-caches` at start and exit, a
// D-Bus call that would reach the host's resolver through the host's /run.
// sshuttle looks on PATH and in /bin, /usr/bin, /sbin and /usr/sbin.
func hideResolvers() []ns.Mount {
	var mounts []ns.Mount
	seen := map[string]bool{}
	dirs := append(filepath.SplitList(os.Getenv("PATH")), "/bin", "/usr/bin", "/sbin", "/usr/sbin")
	for _, dir := range dirs {
		for _, name := range []string{"resolvectl", "systemd-resolve"} {
			p, err := filepath.EvalSymlinks(filepath.Join(dir, name))
			if err != nil || !filepath.IsAbs(p) || seen[p] {
				continue
			}
			seen[p] = true
			mounts = append(mounts, ns.Mount{Kind: "bind", Source: os.DevNull, Target: p})
		}
	}
	return mounts
}

// close stops sshuttle (its firewall helper then deletes its nft tables
// and exits; ssh and the server's session end with the connection) and
// the private sshd, waits for their children to exit, deletes what nft
// tables remain (the guard, a killed helper's) and removes the route and
// the address.
func (u *sshuttleUp) close() error {
	u.once.Do(func() {
		// The next condition's sshuttle takes the same nft table names:
		// the old helper must be gone before close returns.
		// Teardown runs when the run's context may be done already.
		children := u.descendants(context.Background())
		errs := []error{stopAll(u.client, u.server)}
		for role, ts := range children {
			_, err := waitGoneOp.On(context.Background(), u.tb.Roles[role], ts)
			errs = append(errs, err)
		}
		cli, srv := u.tb.Roles[topology.Client], u.tb.Roles[topology.Server]
		if (u.client != nil || u.guard) && cli != nil {
			errs = append(errs, u.dropTables())
		}
		if u.route && cli != nil {
			rt := u.loRoute()
			rt.Remove = true
			if _, err := sshuttleRouteOp.On(context.Background(), cli, rt); err != nil {
				errs = append(errs, fmt.Errorf("sshuttle: client route to %s: %w", sshuttleTarget, err))
			}
		}
		if u.addr && srv != nil {
			if err := role.RemoveLoopback(context.Background(), srv, sshuttleTarget); err != nil {
				errs = append(errs, fmt.Errorf("sshuttle: server address %s: %w", sshuttleTarget, err))
			}
		}
		u.err = errors.Join(errs...)
	})
	return u.err
}

// dropTables deletes the guard table and the nft tables sshuttle's
// helper left in the client namespace (sshuttle-ipv4-<port> and -ipv6-,
// family inet): it deletes its own on a clean exit, not when killed.
func (u *sshuttleUp) dropTables() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := u.nft(ctx, "list", "tables")
	if err != nil {
		return err
	}
	var errs []error
	for _, line := range strings.Split(out, "\n") {
		// "table inet sshuttle-ipv4-12300"
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "table" || f[2] != sshuttleGuardTable && !strings.HasPrefix(f[2], "sshuttle-") {
			continue
		}
		if f[2] != sshuttleGuardTable && u.tb.Logf != nil {
			u.tb.Logf("sshuttle: deleting the nft table %s %s its helper left", f[1], f[2])
		}
		_, err := u.nft(ctx, "delete", "table", f[1], f[2])
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// loRoute is a /32 route to Dst via lo with source Src, or its removal.
type loRoute struct {
	Dst, Src netip.Addr
	Remove   bool
}

var (
	sshuttleRouteOp = role.NewOp("sshuttle.lo-route", func(_ context.Context, r loRoute) (role.Nothing, error) {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return role.Nothing{}, err
		}
		route := &netlink.Route{LinkIndex: lo.Attrs().Index, Dst: prefix32(r.Dst), Src: r.Src.AsSlice()}
		if r.Remove {
			return role.Nothing{}, netlink.RouteDel(route)
		}
		return role.Nothing{}, netlink.RouteReplace(route)
	})
	// sshuttleBytesOp sums tcpi_bytes_received + tcpi_bytes_acked of the
	// role's TCP connections to server (see carried).
	sshuttleBytesOp = role.NewOp("sshuttle.connection-bytes", func(_ context.Context, server netip.AddrPort) (int64, error) {
		socks, err := netlink.SocketDiagTCPInfo(unix.AF_INET)
		for try := 0; errors.Is(err, netlink.ErrDumpInterrupted) && try < 5; try++ {
			socks, err = netlink.SocketDiagTCPInfo(unix.AF_INET) // sockets came or went during the dump
		}
		if err != nil {
			return 0, err
		}
		var total int64
		found := false
		for _, s := range socks {
			id := s.InetDiagMsg.ID
			if s.TCPInfo != nil && id.DestinationPort == server.Port() && id.Destination.Equal(server.Addr().AsSlice()) {
				total += int64(s.TCPInfo.Bytes_received + s.TCPInfo.Bytes_acked)
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("no SSH connection to %s", server)
		}
		return total, nil
	})
)
