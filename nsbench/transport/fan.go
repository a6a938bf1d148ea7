package transport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/wg"
)

// Many clients on one server: a transport that can carry N
// client namespaces at once, each over its own path to the one server,
// is a Fanner. Each client's load is its own iperf3 stream to its own
// iperf3 server (iperf3 serves one test at a time), listening on
// FanPort(i) in the server's namespace.

// Fanner is a transport that carries many clients at once to the one
// server.
type Fanner interface {
	// FanUp builds one path per client role in clients, all to the one
	// server, client i's reaching the server's port ports[i] at
	// Fan.Targets[i] from its own namespace. The transport's server
	// processes run in tb's server role (the transport's leaf, whose CPU
	// and memory are the server's cost). If FanUp fails, it removes what
	// it had built.
	FanUp(ctx context.Context, tb *Testbed, clients []string, ports []int) (*Fan, error)
}

// Fan is many clients' paths to the one server.
type Fan struct {
	// Label is the report's text for the fan ("Pure SSH, a session per
	// client"): what carries the clients' streams, which may differ from
	// the transport's own label (its instruments run over SSH).
	Label   string
	Targets []string // per client, host:port as its namespace reaches its iperf3 server
	// Server names what the server role's transport leaf holds ("sshd
	// and its sessions", "wireguard-go").
	Server string
	// Relay, for a path through a relay (tw's), names what the relay
	// role's transport leaf holds; "" without one.
	Relay string
	// InKernel, when set, names the kernel part that carries the data: no
	// process holds its CPU or memory (as Path.InKernel).
	InKernel string
	Close    func() error // undoes FanUp, clients first; safe to call twice
}

// MaxFanClients is the most clients one fan holds: the topology's /24
// and the transports' inner /24s have room for them and the server, and
// WireGuard's numbered interface names fit IFNAMSIZ up to 99.
const MaxFanClients = 64

// fanIPerf3Base is the first of the clients' iperf3 servers' ports in the
// server's namespace (TestPrivatePortsApart keeps the range off the
// fixtures', tw's and the transports' own).
const fanIPerf3Base = 12900

// FanPort is client i's (from 0) iperf3 server port.
func FanPort(i int) int { return fanIPerf3Base + i }

// fanLocalPort is where an SSH client forwards its iperf3 stream from, on
// 127.0.0.1 of its own namespace.
const fanLocalPort = 15201

var (
	_ Fanner = SSH{}
	_ Fanner = (*WireGuard)(nil)
)

// FanUp for Pure SSH: one SSH session per client to a private sshd of
// the transport (sshd and every session's process in the transport's
// leaf of the server), each forwarding the client's iperf3 stream (ssh
// -L) to its server's port. The clients start together; each is ready
// when its forward listens, which ssh opens only after logging in.
func (s SSH) FanUp(ctx context.Context, tb *Testbed, clients []string, ports []int) (*Fan, error) {
	d, err := privateSSHD(ctx, tb, tb.ProgramAt(topology.Server, s.sshd), "sshd-fan", "sshd-fan", sshPrivatePort,
		"AllowTcpForwarding yes", "MaxStartups 200:30:400", "MaxSessions 200")
	if err != nil {
		return nil, fmt.Errorf("ssh: %w", err)
	}
	procs := []*proc.Process{d}
	f := &Fan{Label: "Pure SSH, a session per client (ssh -L)", Server: "sshd and its sessions", Close: func() error {
		ps := procs
		procs = nil
		for i, j := 0, len(ps)-1; i < j; i, j = i+1, j-1 {
			ps[i], ps[j] = ps[j], ps[i]
		}
		return stopAll(ps...)
	}}
	server := tb.Roles[topology.Server].Addr().String()
	for i, name := range clients {
		r := tb.Roles[name]
		opts, err := fanIdentity(ctx, tb, r)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("ssh: %s: %w", name, err), f.Close())
		}
		// A build's ssh as the client's host has it (its copy there).
		program := cmp.Or(tb.ProgramAt(name, s.ssh), "ssh")
		argv := append([]string{program, "-N", "-L", fmt.Sprintf("127.0.0.1:%d:127.0.0.1:%d", fanLocalPort, ports[i])}, opts...)
		argv = append(argv, "-p", strconv.Itoa(sshPrivatePort), "-o", "BatchMode=yes",
			"-o", "ExitOnForwardFailure=yes", "-o", "ServerAliveInterval=15", BenchUser+"@"+server)
		p, err := r.Start(ctx, r.Program("ssh-fan", argv...))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("ssh: %s: %w", name, err), f.Close())
		}
		procs = append(procs, p)
		f.Targets = append(f.Targets, net.JoinHostPort("127.0.0.1", strconv.Itoa(fanLocalPort)))
	}
	for i, name := range clients {
		if err := waitListening(ctx, tb.Roles[name], fanLocalPort, procs[i+1]); err != nil {
			return nil, errors.Join(fmt.Errorf("ssh: %s: session not up: %w", name, err), f.Close())
		}
	}
	return f, nil
}

// fanIdentity gives client role r the fixtures' client key and known
// hosts (the first client has them already) and returns its ssh options.
func fanIdentity(ctx context.Context, tb *Testbed, r *role.Role) ([]string, error) {
	first := tb.Roles[topology.Client]
	if r.Name() == first.Name() {
		return tb.Fixtures.ClientOptions(), nil
	}
	paths, err := copyFrom(ctx, first, r, "ssh", tb.Fixtures.KeyPath, tb.Fixtures.KnownHosts)
	if err != nil {
		return nil, fmt.Errorf("client identity: %w", err)
	}
	return SSHClientOptions(paths[0], paths[1]), nil
}

// copyFrom copies files of role from, with their modes, to sub of role
// to's directory (made 0700), and returns their paths there.
func copyFrom(ctx context.Context, from, to *role.Role, sub string, files ...string) ([]string, error) {
	dir := filepath.Join(to.Dir(), sub)
	if err := role.MkdirAll(ctx, to, dir, 0o700); err != nil {
		return nil, err
	}
	var out []string
	for _, src := range files {
		b, err := role.ReadFile(ctx, from, src)
		if err != nil {
			return nil, err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(src, ".key") || strings.HasSuffix(src, ".twctx") || !strings.Contains(filepath.Base(src), ".") {
			mode = 0o600 // a secret: id_ed25519, client.key, a tw user's context
		}
		dst := filepath.Join(dir, filepath.Base(src))
		if err := role.WriteFile(ctx, to, dst, b, mode); err != nil {
			return nil, err
		}
		out = append(out, dst)
	}
	return out, nil
}

// waitListening waits until something listens on port in r's namespace,
// or p exits.
func waitListening(ctx context.Context, r *role.Role, port int, p *proc.Process) error {
	return proc.WaitUntil(ctx, fmt.Sprintf("a listener on %d in %s", port, r.Name()), func() error {
		st, err := role.TCP(ctx, r)
		if err != nil {
			return err
		}
		if !metrics.Listening(st.Sockets, port) {
			return fmt.Errorf("nothing listens on %d yet", port)
		}
		return nil
	}, p)
}

// FanUp for WireGuard: one server device with every client as its peer
// (wg.UpStar), client i at host i+2 of the WireGuard range; every client
// aims at the server's tunnel address.
func (w *WireGuard) FanUp(ctx context.Context, tb *Testbed, clients []string, ports []int) (*Fan, error) {
	c, err := w.Resolve()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, wireguardReady)
	defer cancel()
	server, err := w.end(tb, c, topology.Server, WireGuardServerAddr)
	if err != nil {
		return nil, err
	}
	var ends []wg.End
	for i, name := range clients {
		e, err := w.end(tb, c, name, innerPrefix("wireguard, wireguard-kernel, wireguard-go", byte(i+2)))
		if err != nil {
			return nil, err
		}
		ends = append(ends, e)
	}
	star, err := wg.UpStar(ctx, wg.StarSpec{Server: server, Clients: ends,
		Endpoint: netip.AddrPortFrom(tb.Roles[topology.Server].Addr(), WireGuardPort), Keepalive: WireGuardKeepalive})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.Name(), err)
	}
	f := &Fan{Label: "WireGuard (wireguard-go), a peer per client on one server device", Server: "wireguard-go", Close: star.Close}
	if c.Impl == wg.ImplKernel {
		f.Label, f.Server, f.InKernel = "WireGuard (kernel), a peer per client on one server device", "", "kernel WireGuard"
	}
	for _, p := range ports {
		f.Targets = append(f.Targets, net.JoinHostPort(WireGuardServerAddr.Addr().String(), strconv.Itoa(p)))
	}
	return f, nil
}

// FannerOf is t's many-client form: t itself when it is a Fanner, or a
// build's row (Built) whose transport is one; false when t has none.
func FannerOf(t Transport) (Fanner, bool) {
	if b, ok := t.(*Built); ok {
		if _, ok := b.Transport.(Fanner); !ok {
			return nil, false
		}
		return b, true
	}
	f, ok := t.(Fanner)
	return f, ok
}

// FanUp for a build's row: its transport's, made with the build's
// programs, the fan's label naming the build as the row's does.
func (b *Built) FanUp(ctx context.Context, tb *Testbed, clients []string, ports []int) (*Fan, error) {
	f, ok := b.Transport.(Fanner)
	if !ok {
		return nil, fmt.Errorf("%s: no many-client form", b.Name())
	}
	fan, err := f.FanUp(ctx, tb, clients, ports)
	if err != nil {
		return nil, err
	}
	if fan.Label != "" {
		fan.Label += " @" + b.build.Label
	}
	return fan, nil
}

// CanFan passes the transport's own check of its many-client form through.
func (b *Built) CanFan() error {
	if cf, ok := b.Transport.(interface{ CanFan() error }); ok {
		return cf.CanFan()
	}
	return nil
}
