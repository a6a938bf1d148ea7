package wg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
)

// DefaultMTU is the tunnel MTU when a Link sets none: WireGuard's own
// default (1500 minus the IPv6 and WireGuard overhead).
const DefaultMTU = 1420

// stopGrace is how long a userspace daemon gets between SIGTERM and SIGKILL.
const stopGrace = 3 * time.Second

// Link describes one WireGuard interface. It is plain data; Create makes it.
type Link struct {
	Name string // unique on the host (IfName)
	Impl Impl
	MTU  int          // 0: DefaultMTU
	Addr netip.Prefix // the interface's tunnel address, e.g. 10.99.0.1/24
	// Daemon, for a userspace device, is the daemon to run; nil:
	// UserspaceDaemon's choice.
	Daemon *Daemon
}

// Device is a WireGuard interface in a role, reached only through the
// role's ops (ops.go): every netlink and wgctrl call runs inside the
// role's namespace.
type Device struct {
	Link
	Role *role.Role
	Proc *proc.Process // the userspace daemon; nil for the kernel's device

	closed bool
}

// Create builds l in role r: a kernel link made inside r's namespace, or
// wireguard-go started as r's program (in its namespace and cgroup, as the
// caller's direct child). It waits until wgctrl sees the device as the
// implementation asked for, then sets the MTU and address and brings the
// link up. Waiting ends with ctx. On failure it removes what it made.
func Create(ctx context.Context, r *role.Role, l Link) (d *Device, err error) {
	if err := checkIfName(l.Name); err != nil {
		return nil, err
	}
	if l.MTU == 0 {
		l.MTU = DefaultMTU
	}
	if !l.Addr.IsValid() {
		return nil, fmt.Errorf("wireguard %s: no tunnel address", l.Name)
	}
	d = &Device{Link: l, Role: r}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Close())
			d = nil
		}
	}()
	switch l.Impl {
	case ImplKernel:
		// Made inside r's namespace, the device is born there: its UDP
		// socket lives there, so the encrypted traffic crosses r's veth.
		made, err := createKernelOp.On(ctx, r, l)
		if err != nil {
			return d, fmt.Errorf("wireguard %s: create kernel link: %w", l.Name, err)
		}
		if made.NoKernel {
			return d, fmt.Errorf("wireguard %s: create kernel link: %w: %s", l.Name, ErrNoKernel, made.Reason)
		}
	case ImplUserspace:
		daemon := UserspaceDaemon().At(r.Self())
		if l.Daemon != nil {
			daemon = *l.Daemon
		}
		if len(daemon.Argv) == 0 {
			return d, fmt.Errorf("wireguard %s: no wireguard-go daemon: %s", l.Name, daemon.Fallback)
		}
		prog := r.Program("wireguard-go", append(append([]string{}, daemon.Argv...), l.Name)...)
		prog.Env = append(prog.Env, daemon.Env...)
		if d.Proc, err = r.Start(ctx, prog); err != nil {
			return d, fmt.Errorf("wireguard %s: start wireguard-go: %w", l.Name, err)
		}
	default:
		return d, fmt.Errorf("wireguard %s: unknown implementation %q", l.Name, l.Impl)
	}
	if err := d.waitReady(ctx); err != nil {
		return d, err
	}
	if _, err := setLinkOp.On(ctx, r, l); err != nil {
		return d, fmt.Errorf("wireguard %s: %w", l.Name, err)
	}
	return d, nil
}

// waitReady polls until the link exists in the namespace and wgctrl reaches
// it as the expected implementation. It gives up when ctx ends or the
// userspace daemon exits.
func (d *Device) waitReady(ctx context.Context) error {
	want := wgtypes.LinuxKernel
	if d.Impl == ImplUserspace {
		want = wgtypes.Userspace
	}
	err := poll(ctx, d.exited(), func() error {
		st, err := d.state(ctx)
		if err != nil {
			return err
		}
		if st.Type != want {
			return fmt.Errorf("wgctrl reaches a %s device, want %s", st.Type, want)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("wireguard %s: not ready: %w%s", d.Name, err, d.exitNote())
	}
	return nil
}

// Config is what Configure sets: the device's key, the port it listens
// on (0: none set) and its peer; a server of many clients (Star) lists
// the others in More.
type Config struct {
	PrivateKey wgtypes.Key
	ListenPort int
	Peer       Peer
	More       []Peer `json:",omitempty"`
}

// Peer is the device's peer: its key, where it is reached (unset: it
// calls in), the keepalive interval (0: none) and the one address routed
// to it.
type Peer struct {
	PublicKey wgtypes.Key
	Endpoint  netip.AddrPort
	Keepalive time.Duration
	AllowedIP netip.Addr
}

// Configure applies cfg through wgctrl: the same call for both
// implementations.
func (d *Device) Configure(ctx context.Context, cfg Config) error {
	if _, err := configureOp.On(ctx, d.Role, configureArgs{Name: d.Name, Config: cfg}); err != nil {
		return fmt.Errorf("wireguard %s: configure: %w", d.Name, err)
	}
	return nil
}

// State is a device as its role's kernel and wgctrl see it.
type State struct {
	Type  wgtypes.DeviceType
	MTU   int
	Peers []PeerState
}

// PeerState is one peer's counters and last handshake.
type PeerState struct {
	PublicKey        wgtypes.Key
	RxBytes, TxBytes int64
	LastHandshake    time.Time
}

// state reads the device's link and wgctrl state in its role.
func (d *Device) state(ctx context.Context) (State, error) { return showOp.On(ctx, d.Role, d.Name) }

// WaitHandshake polls, with backoff, until the device has completed a
// handshake with peer. It gives up when ctx ends or the daemon exits.
func (d *Device) WaitHandshake(ctx context.Context, peer wgtypes.Key) error {
	err := poll(ctx, d.exited(), func() error {
		st, err := d.state(ctx)
		if err != nil {
			return err
		}
		for _, p := range st.Peers {
			if p.PublicKey == peer {
				if p.LastHandshake.IsZero() {
					return errors.New("no handshake yet")
				}
				return nil
			}
		}
		return fmt.Errorf("no peer %s", peer)
	})
	if err != nil {
		return fmt.Errorf("wireguard %s: handshake: %w%s", d.Name, err, d.exitNote())
	}
	return nil
}

// Close removes the device: the userspace daemon is stopped by PID (it
// removes its socket and its TUN goes with it), then a socket or link that
// is still there (the kernel's link, or what a daemon killed after the
// grace period left) is removed in the role. Safe to call twice and on a
// partly created device.
func (d *Device) Close() error {
	if d == nil || d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	if d.Proc != nil {
		errs = append(errs, d.Proc.Stop(stopGrace))
	}
	if _, err := removeOp.On(context.Background(), d.Role, removeArgs{Name: d.Name, Socket: d.Proc != nil}); err != nil {
		errs = append(errs, fmt.Errorf("wireguard %s: %w", d.Name, err))
	}
	return errors.Join(errs...)
}

func (d *Device) exited() <-chan struct{} {
	if d.Proc == nil {
		return nil
	}
	return d.Proc.Done()
}

// exitNote quotes the daemon's exit when it is the reason a wait failed.
func (d *Device) exitNote() string {
	if d.Proc == nil {
		return ""
	}
	select {
	case <-d.Proc.Done():
		return fmt.Sprintf(" (wireguard-go pid %d exited: %v)", d.Proc.PID(), d.Proc.Err())
	default:
		return ""
	}
}

// poll calls f with exponential backoff (1 ms to 100 ms) until it returns
// nil, ctx ends, or exited is closed, and returns f's last error with the
// reason it stopped.
func poll(ctx context.Context, exited <-chan struct{}, f func() error) error {
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		last := f()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-exited:
			return fmt.Errorf("daemon exited (last: %v)", last)
		case <-time.After(delay):
		}
	}
}

// The ops a Device carries out in its role's namespace. A kernel device
// is reached only through a generic-netlink socket opened in its
// namespace, so every op that reads or configures a device opens its own
// wgctrl client there (after the link exists: opening it resolves the
// generic-netlink family, and creating the link is what loads a modular
// WireGuard) and closes it before returning.

// kernelMade says whether the kernel made the link; NoKernel is a kernel
// without WireGuard, which Create turns into ErrNoKernel.
type kernelMade struct {
	NoKernel bool
	Reason   string
}

type configureArgs struct {
	Name   string
	Config Config
}

type removeArgs struct {
	Name   string
	Socket bool // also a userspace daemon's UAPI socket
}

var (
	createKernelOp = role.NewOp("wg.create-kernel-link", func(_ context.Context, l Link) (kernelMade, error) {
		err := netlink.LinkAdd(&netlink.Wireguard{LinkAttrs: netlink.LinkAttrs{Name: l.Name, MTU: l.MTU}})
		if errors.Is(err, unix.EOPNOTSUPP) {
			return kernelMade{NoKernel: true, Reason: err.Error()}, nil
		}
		return kernelMade{}, err
	})
	setLinkOp = role.NewOp("wg.set-link", func(_ context.Context, l Link) (role.Nothing, error) {
		link, err := netlink.LinkByName(l.Name)
		if err != nil {
			return role.Nothing{}, fmt.Errorf("link: %w", err)
		}
		if err := netlink.LinkSetMTU(link, l.MTU); err != nil {
			return role.Nothing{}, fmt.Errorf("set mtu %d: %w", l.MTU, err)
		}
		if err := netlink.AddrAdd(link, &netlink.Addr{IPNet: ipNet(l.Addr)}); err != nil {
			return role.Nothing{}, fmt.Errorf("add address %s: %w", l.Addr, err)
		}
		if err := netlink.LinkSetUp(link); err != nil {
			return role.Nothing{}, fmt.Errorf("bring up: %w", err)
		}
		return role.Nothing{}, nil
	})
	configureOp = role.NewOp("wg.configure", func(_ context.Context, a configureArgs) (role.Nothing, error) {
		return role.Nothing{}, withClient(func(c *wgctrl.Client) error {
			return c.ConfigureDevice(a.Name, a.Config.wgtypes())
		})
	})
	showOp = role.NewOp("wg.show", func(_ context.Context, name string) (State, error) {
		var st State
		l, err := netlink.LinkByName(name)
		if err != nil {
			return st, fmt.Errorf("link: %w", err)
		}
		st.MTU = l.Attrs().MTU
		err = withClient(func(c *wgctrl.Client) error {
			dev, err := c.Device(name)
			if err != nil {
				return err
			}
			st.Type = dev.Type
			for _, p := range dev.Peers {
				st.Peers = append(st.Peers, PeerState{PublicKey: p.PublicKey,
					RxBytes: p.ReceiveBytes, TxBytes: p.TransmitBytes, LastHandshake: p.LastHandshakeTime})
			}
			return nil
		})
		if err != nil {
			return st, fmt.Errorf("wgctrl: %w", err)
		}
		return st, nil
	})
	removeOp = role.NewOp("wg.remove", func(_ context.Context, a removeArgs) (role.Nothing, error) {
		if a.Name == "" || strings.ContainsRune(a.Name, '/') || a.Name == "." || a.Name == ".." {
			return role.Nothing{}, fmt.Errorf("%q is not an interface name", a.Name) // its socket path would leave the socket directory
		}
		var errs []error
		if a.Socket {
			if err := os.Remove(SocketPath(a.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove socket: %w", err))
			}
		}
		if l, err := netlink.LinkByName(a.Name); err == nil {
			if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
				errs = append(errs, fmt.Errorf("delete link: %w", err))
			}
		}
		return role.Nothing{}, errors.Join(errs...)
	})
)

// withClient runs f with a wgctrl client opened in the calling thread's
// namespace, and closes it.
func withClient(f func(*wgctrl.Client) error) error {
	c, err := wgctrl.New()
	if err != nil {
		return fmt.Errorf("open wgctrl: %w", err)
	}
	defer c.Close()
	return f(c)
}

// wgtypes is cfg as wgctrl takes it: the peer list replaced by Peer and
// More, each peer's allowed addresses by the one given.
func (cfg Config) wgtypes() wgtypes.Config {
	key := cfg.PrivateKey
	out := wgtypes.Config{PrivateKey: &key, ReplacePeers: true}
	for _, p := range append([]Peer{cfg.Peer}, cfg.More...) {
		out.Peers = append(out.Peers, p.wgtypes())
	}
	if cfg.ListenPort != 0 {
		port := cfg.ListenPort
		out.ListenPort = &port
	}
	return out
}

func (p Peer) wgtypes() wgtypes.PeerConfig {
	peer := wgtypes.PeerConfig{
		PublicKey:         p.PublicKey,
		ReplaceAllowedIPs: true,
		AllowedIPs:        []net.IPNet{*hostNet(p.AllowedIP)},
	}
	if p.Endpoint.IsValid() {
		peer.Endpoint = net.UDPAddrFromAddrPort(p.Endpoint)
	}
	if p.Keepalive != 0 {
		keepalive := p.Keepalive
		peer.PersistentKeepaliveInterval = &keepalive
	}
	return peer
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
