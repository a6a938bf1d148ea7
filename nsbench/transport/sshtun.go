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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/nsbench/account"
	"github.com/twnsbench/twnsbench/nsbench/proc"
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
	sshTunPort  = 2222
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
	u := &sshTunUp{tb: tb, dir: filepath.Join(tb.Dir, "ssh-tun"), logName: "ssh-tun-" + t.variant}
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
	cipher, mac, err := u.negotiated()
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
			{Key: "client / ssh -w", PID: u.client.PID()},
			{Key: "server / sshd (tunnel)", PID: u.server.PID()},
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
	u.server, err = privateSSHD(ctx, u.tb, u.dir, "sshd-tun", sshTunPort,
		"PermitTunnel point-to-point",
		// The seed's "aes128-ctr" row also asks for this key exchange,
		// which OpenSSH no longer offers by default.
		"KexAlgorithms +diffie-hellman-group14-sha1")
	if err != nil {
		return fmt.Errorf("ssh-tun: %w", err)
	}
	uid, err := account.UID(u.dir, BenchUser)
	if err != nil {
		return err
	}
	// A persistent tun0 owned by the account (user and group: netlink
	// would otherwise set group root, which the account is not in), so
	// the unprivileged sshd session can attach to it, and already up: sshd
	// brings a down one up itself, which needs CAP_NET_ADMIN ("open
	// failed" without it).
	srv := u.tb.Topo.Roles[topology.Server].NS
	err = srv.Do(func() error {
		if l, err := netlink.LinkByName(sshTunIface); err == nil {
			netlink.LinkDel(l) // left by this run's previous condition
		}
		tun := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: sshTunIface}, Mode: netlink.TUNTAP_MODE_TUN,
			Flags: netlink.TUNTAP_NO_PI | netlink.TUNTAP_ONE_QUEUE, Owner: uint32(uid), Group: uint32(uid)}
		if err := netlink.LinkAdd(tun); err != nil {
			return err
		}
		return netlink.LinkSetUp(tun)
	})
	if err != nil {
		return fmt.Errorf("ssh-tun: server %s: %w", sshTunIface, err)
	}
	return nil
}

// privateSSHD starts a transport's own sshd in the server role, so that
// it and every session it forks are in the transport's cgroup, not the
// fixtures': the bench account in its private mount namespace, the
// fixtures' authorized keys, a host key kept in dir across conditions,
// port on every address, and extra configuration lines. name names its
// log (LogDir/server-<name>.log). It returns once port accepts.
func privateSSHD(ctx context.Context, tb *Testbed, dir, name string, port int, extra ...string) (*proc.Process, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	hostKey := filepath.Join(dir, "ssh_host_ed25519_key")
	if _, err := os.Stat(hostKey); errors.Is(err, os.ErrNotExist) {
		if err := keygen(hostKey, "twnsbench "+name+" host"); err != nil {
			return nil, err
		}
	}
	acct, err := account.SSHD(dir, BenchUser)
	if err != nil {
		return nil, err
	}
	lines := []string{
		"# twnsbench " + name,
		"Port " + strconv.Itoa(port),
		"ListenAddress 0.0.0.0",
		"HostKey " + hostKey,
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"AuthorizedKeysFile " + filepath.Join(tb.Dir, "ssh", "authorized_keys"),
	}
	lines = append(append(lines, extra...), account.SSHDLogins(BenchUser)...)
	conf := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(conf, []byte(strings.Join(append(lines, "X11Forwarding no", ""), "\n")), 0o644); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	sshd, err := systemProgram("sshd")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	spec := tb.Program(topology.Server, name, sshd, "-D", "-e", "-f", conf)
	spec.Mounts = append(spec.Mounts, acct...)
	addr := net.JoinHostPort(tb.Topo.Spec.Addr(topology.Server).String(), strconv.Itoa(port))
	return tb.Start(ctx, topology.Server, spec, addr)
}

// startClient starts ssh -w in the client role and configures both ends
// of the tunnel once the client's tun device exists, then waits for the
// server's sshd through it.
func (u *sshTunUp) startClient(ctx context.Context, opts []string) error {
	argv := []string{"ssh", "-v", "-N", "-w", "0:0", "-o", "Tunnel=point-to-point",
		"-i", u.tb.Fixtures.KeyPath, "-p", strconv.Itoa(sshTunPort),
		"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "ExitOnForwardFailure=yes", "-o", "ServerAliveInterval=15"}
	argv = append(argv, opts...)
	argv = append(argv, BenchUser+"@"+u.tb.Topo.Spec.Addr(topology.Server).String())
	spec := u.tb.Program(topology.Client, u.logName, argv...)
	p, err := proc.Start(spec)
	if err != nil {
		return err
	}
	u.client = p
	cli := u.tb.Topo.Roles[topology.Client].NS
	srv := u.tb.Topo.Roles[topology.Server].NS
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		err := cli.Do(func() error { _, err := netlink.LinkByName(sshTunIface); return err })
		if err == nil {
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
	for _, end := range []struct {
		do          func(func() error) error
		local, peer netip.Addr
	}{{cli.Do, sshTunClient, sshTunServer}, {srv.Do, sshTunServer, sshTunClient}} {
		err := end.do(func() error {
			l, err := netlink.LinkByName(sshTunIface)
			if err != nil {
				return err
			}
			a := &netlink.Addr{IPNet: prefix32(end.local), Peer: prefix32(end.peer)}
			if err := netlink.AddrReplace(l, a); err != nil {
				return err
			}
			return netlink.LinkSetUp(l)
		})
		if err != nil {
			return fmt.Errorf("ssh-tun: configure %s %s: %w", end.local, sshTunIface, err)
		}
	}
	return proc.WaitTCP(ctx, cli, net.JoinHostPort(sshTunServer.String(), strconv.Itoa(SSHPort)), p)
}

// negotiated reads the data cipher and MAC from ssh -v's log: what the
// connection uses, not what was asked for.
func (u *sshTunUp) negotiated() (cipher, mac string, err error) {
	b, err := os.ReadFile(filepath.Join(u.tb.LogDir, topology.Client+"-"+u.logName+".log"))
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
		if r, ok := u.tb.Topo.Roles[topology.Server]; ok {
			r.NS.Do(func() error {
				if l, err := netlink.LinkByName(sshTunIface); err == nil {
					return netlink.LinkDel(l)
				}
				return nil
			})
		}
		u.closeErr = err
	})
	return u.closeErr
}
