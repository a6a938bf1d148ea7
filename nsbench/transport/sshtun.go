package transport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/nsbench/account"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// SSHTun is seed 002's SSH tunnel: `ssh -w 0:0 -o Tunnel=point-to-point`
// from the client to a private sshd in the server role with PermitTunnel,
// a layer-3 path between a tun device at each end; every instrument aims at
// the server's inner address. The server's tun0 is made persistent and
// owned by the bench account before the login, so sshd attaches to it
// without root; the client's ssh (root) makes its own.
type SSHTun struct {
	variant string
}

// The tunnel's inner addresses and its sshd's port.
var (
	sshTunServer = innerAddr("ssh-tun", 1)
	sshTunClient = innerAddr("ssh-tun", 2)
)

const (
	sshTunPort  = 2232 // its private sshd (privatePorts)
	sshTunIface = "tun0"
	sshTunReady = time.Minute
)

// sshTunVariants are the client options of each variant: the default
// negotiation, and the seed's "aes128-ctr" row.
var sshTunVariants = map[string][]string{
	"default":    nil,
	"aes128-ctr": {"-oCiphers=aes128-ctr", "-oMACs=hmac-sha1", "-oKexAlgorithms=diffie-hellman-group14-sha1"},
}

var sshTunSpec = Spec{
	Name:     "ssh-tun",
	Summary:  "SSH over an SSH -w layer-3 tunnel (OpenSSH tun devices, PermitTunnel)",
	Variants: []string{"default", "aes128-ctr"},
	Sets:     []string{"seed-002"},
	New:      func(c Config) (Transport, error) { return &SSHTun{variant: c.Variant}, nil },
}

func (t *SSHTun) Name() string { return sshTunSpec.RowName(t.variant) }
func (t *SSHTun) Label() string {
	return "SSH over an SSH -w tunnel (" + t.variant + ")"
}
func (t *SSHTun) About() string {
	return "is a layer-3 tunnel inside one SSH connection (ssh -w, a tun device at each end): every packet is encrypted once more by OpenSSH, in one process per side (the client's ssh, the tunnel's sshd session), both in the transport's cgroups."
}

func (t *SSHTun) Check() error {
	var missing []string
	for _, p := range []string{"ssh", "sshd"} {
		if _, err := systemProgram(p); err != nil {
			missing = append(missing, err.Error())
		}
	}
	if _, err := os.Stat(tunDevice); err != nil {
		missing = append(missing, "needs "+tunDevice+": "+err.Error())
	}
	if len(missing) > 0 {
		return &UnavailableError{Transport: t.Name(), Reason: strings.Join(missing, "; "), Fix: "install openssh-client and openssh-server; load tun"}
	}
	return nil
}

// kexLine is ssh -v's report of the negotiated data cipher.
var kexLine = regexp.MustCompile(`kex: server->client cipher: (\S+) MAC: (\S+)`)

func (t *SSHTun) Up(ctx context.Context, tb *Testbed) (path *Path, err error) {
	ctx, cancel := context.WithTimeout(ctx, sshTunReady)
	defer cancel()
	u := &sshTunUp{tb: tb, dir: "ssh-tun", logName: "ssh-tun-" + t.variant}
	defer func() {
		if err != nil {
			err = errors.Join(err, u.close())
		}
	}()
	if err := u.startServer(ctx); err != nil {
		return nil, err
	}
	if err := u.startClient(ctx, sshTunVariants[t.variant]); err != nil {
		return nil, err
	}
	cipher, mac, err := u.negotiated(ctx)
	if err != nil {
		return nil, err
	}
	if want := sshTunVariants[t.variant]; len(want) > 0 && (cipher != "aes128-ctr" || mac != "hmac-sha1") {
		return nil, fmt.Errorf("ssh-tun %s: negotiated %s/%s, not aes128-ctr/hmac-sha1", t.variant, cipher, mac)
	}
	suite := cipher
	if mac != "<implicit>" {
		suite += "/" + mac
	}
	return &Path{
		Target: DirectTarget(sshTunServer.String()),
		Facts:  results.Facts{{Key: "ssh-tun cipher", Value: suite}},
		Label:  "SSH over an SSH -w tunnel (" + suite + ")",
		Procs: []RSSProc{
			tb.Proc(topology.Client, "ssh -w", u.client),
			tb.Proc(topology.Server, "sshd (tunnel)", u.server),
		},
		Carried: LinkBytes(u.tb.Roles[topology.Client], sshTunIface),
		Close:   u.close,
	}, nil
}

type sshTunUp struct {
	tb             *Testbed
	dir            string
	logName        string // the client's log: LogDir/client-<logName>.log
	server, client *proc.Process
	closeOnce      sync.Once
	closeErr       error
}

// startServer starts the tunnel's private sshd, with PermitTunnel, and
// makes the server's tun device for the bench account.
func (u *sshTunUp) startServer(ctx context.Context) error {
	var err error
	u.server, err = privateSSHD(ctx, u.tb, "", u.dir, "sshd-tun", sshTunPort,
		"PermitTunnel point-to-point",
		// The seed's "aes128-ctr" row also asks for this key exchange,
		// which OpenSSH no longer offers by default.
		"KexAlgorithms +diffie-hellman-group14-sha1")
	if err != nil {
		return fmt.Errorf("ssh-tun: %w", err)
	}
	srv := u.tb.Roles[topology.Server]
	uid, err := accountUID.On(ctx, srv, sshdAccountArgs{Dir: filepath.Join(srv.Dir(), u.dir), User: BenchUser})
	if err != nil {
		return fmt.Errorf("ssh-tun: %w", err)
	}
	// A persistent tun0 owned by the account (user and group: netlink
	// would otherwise set group root, which the account is not in), so
	// the unprivileged sshd session can attach to it, and already up: sshd
	// brings a down one up itself, which needs CAP_NET_ADMIN ("open
	// failed" without it).
	_, err = sshTunCreateOp.On(ctx, srv, tunOwner{Name: sshTunIface, UID: uint32(uid)})
	if err != nil {
		return fmt.Errorf("ssh-tun: server %s: %w", sshTunIface, err)
	}
	return nil
}

// privateSSHD starts a transport's own sshd in the server role, its files
// in sub of the server's directory, so that
// it and every session it forks are in the transport's cgroup, not the
// fixtures': the bench account in its private mount namespace, the
// fixtures' authorized keys and host key (the one the clients pin),
// port on every address, and extra configuration lines. name names its
// log (LogDir/server-<name>.log); program is the sshd to start, "" for
// the system's. It returns once port accepts.
func privateSSHD(ctx context.Context, tb *Testbed, program, sub, name string, port int, extra ...string) (*proc.Process, error) {
	spec, addr, err := privateSSHDSpec(ctx, tb, program, sub, name, port, extra...)
	if err != nil {
		return nil, err
	}
	return tb.Start(ctx, topology.Server, spec, addr)
}

// privateSSHDSpec writes privateSSHD's files and returns the sshd to
// start and the address to wait for, to start it (again).
func privateSSHDSpec(ctx context.Context, tb *Testbed, program, sub, name string, port int, extra ...string) (proc.Program, string, error) {
	srv := tb.Roles[topology.Server]
	dir := filepath.Join(srv.Dir(), sub)
	if err := role.MkdirAll(ctx, srv, dir, 0o755); err != nil {
		return proc.Program{}, "", fmt.Errorf("%s: %w", name, err)
	}
	// The fixtures' host key: the one the clients pin.
	hostKey := filepath.Join(srv.Dir(), "ssh", "ssh_host_ed25519_key")
	acct, err := sshdAccount.On(ctx, srv, sshdAccountArgs{Dir: dir, User: BenchUser})
	if err != nil {
		return proc.Program{}, "", fmt.Errorf("%s: %w", name, err)
	}
	lines := []string{
		"# twnsbench " + name,
		"Port " + strconv.Itoa(port),
		"ListenAddress 0.0.0.0",
		"HostKey " + hostKey,
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"AuthorizedKeysFile " + filepath.Join(srv.Dir(), "ssh", "authorized_keys"),
	}
	lines = append(append(lines, extra...), account.SSHDLogins(BenchUser)...)
	conf := filepath.Join(dir, "sshd_config")
	if err := role.WriteFile(ctx, srv, conf, []byte(strings.Join(append(lines, "X11Forwarding no", ""), "\n")), 0o644); err != nil {
		return proc.Program{}, "", fmt.Errorf("%s: %w", name, err)
	}
	sshd := cmp.Or(program, "sshd") // a bare name: the server's host finds its own
	spec := tb.Program(topology.Server, name, sshd, "-D", "-e", "-f", conf)
	spec.Mounts = append(spec.Mounts, acct...)
	addr := net.JoinHostPort(srv.Addr().String(), strconv.Itoa(port))
	return spec, addr, nil
}

// startClient starts ssh -w in the client role and configures both ends
// of the tunnel once the client's tun device exists, then waits for the
// server's sshd through it.
func (u *sshTunUp) startClient(ctx context.Context, opts []string) error {
	// A session with a terminal (-tt, a remote `sleep infinity`), not -N:
	// sshd turns Nagle's algorithm off (TCP_NODELAY) only for a session
	// with a pty, so with -N its side of the connection holds each small
	// tunnelled packet until the client's delayed ACK of the one before
	// (~40 ms): TCP_CRR read 8.9 connections/s (p50 92 ms) with -N and
	// 322/s (p50 1.0 ms) with -tt on the same veth pair (docs/instruments.md).
	argv := append([]string{"ssh", "-v", "-tt", "-w", "0:0", "-o", "Tunnel=point-to-point"}, u.tb.Fixtures.ClientOptions()...)
	argv = append(argv, "-p", strconv.Itoa(sshTunPort),
		"-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes", "-o", "ServerAliveInterval=15")
	argv = append(argv, opts...)
	cli, srv := u.tb.Roles[topology.Client], u.tb.Roles[topology.Server]
	argv = append(argv, BenchUser+"@"+srv.Addr().String(), "sleep", "infinity")
	spec := cli.Program(u.logName, argv...)
	p, err := cli.Start(ctx, spec)
	if err != nil {
		return err
	}
	u.client = p
	// The client's end is addressed as soon as ssh has made its device.
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		found, err := sshTunAddressOp.On(ctx, cli, tunEnds{Name: sshTunIface, Local: sshTunClient, Peer: sshTunServer})
		if err != nil {
			return fmt.Errorf("ssh-tun: configure %s %s: %w", sshTunClient, sshTunIface, err)
		}
		if found {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ssh-tun: no client %s (log: %s): %w", sshTunIface, spec.Log, ctx.Err())
		case <-p.Done():
			return fmt.Errorf("ssh -w exited: %v (log: %s)", p.Err(), spec.Log)
		case <-time.After(delay): // polling for the device, a condition
		}
	}
	found, err := sshTunAddressOp.On(ctx, srv, tunEnds{Name: sshTunIface, Local: sshTunServer, Peer: sshTunClient})
	if err == nil && !found {
		err = errors.New("no such device")
	}
	if err != nil {
		return fmt.Errorf("ssh-tun: configure %s %s: %w", sshTunServer, sshTunIface, err)
	}
	return cli.WaitTCP(ctx, net.JoinHostPort(sshTunServer.String(), strconv.Itoa(SSHPort)), p)
}

// negotiated reads the data cipher and MAC from ssh -v's log: what the
// connection uses, not what was asked for.
func (u *sshTunUp) negotiated(ctx context.Context) (cipher, mac string, err error) {
	cli := u.tb.Roles[topology.Client]
	b, err := role.ReadFile(ctx, cli, cli.Program(u.logName).Log)
	if err != nil {
		return "", "", fmt.Errorf("ssh-tun: negotiated cipher: %w", err)
	}
	m := lastSubmatch(kexLine, b)
	if m == nil {
		return "", "", errors.New("ssh-tun: ssh -v did not report the negotiated cipher")
	}
	return m[1], m[2], nil
}

// close stops the client and the server and removes the server's tun.
func (u *sshTunUp) close() error {
	u.closeOnce.Do(func() {
		err := stopAll(u.client, u.server)
		if r, ok := u.tb.Roles[topology.Server]; ok {
			sshTunDeleteOp.On(context.Background(), r, sshTunIface)
		}
		u.closeErr = err
	})
	return u.closeErr
}

// The ops of the tunnel's tun devices, in the server role (made, deleted)
// and in both (addressed).

// tunOwner is a persistent tun device to make, owned by UID as user and
// group.
type tunOwner struct {
	Name string
	UID  uint32
}

// tunEnds addresses one end of a point-to-point tunnel.
type tunEnds struct {
	Name        string
	Local, Peer netip.Addr
}

var (
	// sshTunCreateOp makes a persistent tun owned by UID, up (see
	// startServer). One left by this run's previous condition is deleted
	// first.
	sshTunCreateOp = role.NewOp("ssh-tun.create-tun", func(_ context.Context, t tunOwner) (role.Nothing, error) {
		if l, err := netlink.LinkByName(t.Name); err == nil {
			netlink.LinkDel(l)
		}
		tun := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: t.Name}, Mode: netlink.TUNTAP_MODE_TUN,
			Flags: netlink.TUNTAP_NO_PI | netlink.TUNTAP_ONE_QUEUE, Owner: t.UID, Group: t.UID}
		if err := netlink.LinkAdd(tun); err != nil {
			return role.Nothing{}, err
		}
		return role.Nothing{}, netlink.LinkSetUp(tun)
	})
	// sshTunAddressOp gives the device its point-to-point address and
	// brings it up; false when there is no such device (yet).
	sshTunAddressOp = role.NewOp("ssh-tun.address-tun", func(_ context.Context, e tunEnds) (bool, error) {
		l, err := netlink.LinkByName(e.Name)
		if err != nil {
			var notFound netlink.LinkNotFoundError
			if errors.As(err, &notFound) {
				return false, nil
			}
			return false, err
		}
		a := &netlink.Addr{IPNet: prefix32(e.Local), Peer: prefix32(e.Peer)}
		if err := netlink.AddrReplace(l, a); err != nil {
			return true, err
		}
		return true, netlink.LinkSetUp(l)
	})
	sshTunDeleteOp = role.NewOp("ssh-tun.delete-tun", func(_ context.Context, name string) (role.Nothing, error) {
		if l, err := netlink.LinkByName(name); err == nil {
			return role.Nothing{}, netlink.LinkDel(l)
		}
		return role.Nothing{}, nil
	})
)
