package wg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
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
}

// StartFunc starts argv, with env added to its environment, as a daemon
// inside the device's namespace (and, for the accounting, its role's
// cgroup), as the caller's direct child.
type StartFunc func(argv, env []string) (*proc.Process, error)

// Device is a WireGuard interface inside a namespace, with a wgctrl client
// opened in that namespace.
type Device struct {
	Link
	NS   *ns.NS
	Proc *proc.Process // the userspace daemon; nil for the kernel's device

	nl     *netlink.Handle
	wgc    *wgctrl.Client
	closed bool
}

// Create builds l inside n: a kernel link made through a netlink handle in
// n, or wireguard-go started by start. It waits until wgctrl sees the device
// as the implementation asked for, then sets the MTU and address and brings
// the link up. Waiting ends with ctx. On failure it removes what it made.
func Create(ctx context.Context, n *ns.NS, l Link, start StartFunc) (d *Device, err error) {
	if err := checkIfName(l.Name); err != nil {
		return nil, err
	}
	if l.MTU == 0 {
		l.MTU = DefaultMTU
	}
	if !l.Addr.IsValid() {
		return nil, fmt.Errorf("wireguard %s: no tunnel address", l.Name)
	}
	d = &Device{Link: l, NS: n}
	if d.nl, err = n.Netlink(); err != nil {
		return nil, fmt.Errorf("wireguard %s: %w", l.Name, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Close())
			d = nil
		}
	}()
	switch l.Impl {
	case ImplKernel:
		// Made through a handle in n, the device is born in n: its UDP
		// socket lives there, so the encrypted traffic crosses n's veth.
		if err := d.nl.LinkAdd(&netlink.Wireguard{LinkAttrs: netlink.LinkAttrs{Name: l.Name, MTU: l.MTU}}); err != nil {
			if errors.Is(err, unix.EOPNOTSUPP) {
				err = fmt.Errorf("%w: %v", ErrNoKernel, err)
			}
			return d, fmt.Errorf("wireguard %s: create kernel link: %w", l.Name, err)
		}
	case ImplUserspace:
		if start == nil {
			return d, fmt.Errorf("wireguard %s: no way to start wireguard-go", l.Name)
		}
		daemon := UserspaceDaemon()
		if len(daemon.Argv) == 0 {
			return d, fmt.Errorf("wireguard %s: no wireguard-go daemon: %s", l.Name, daemon.Fallback)
		}
		argv := append(append([]string{}, daemon.Argv...), l.Name)
		if d.Proc, err = start(argv, daemon.Env); err != nil {
			return d, fmt.Errorf("wireguard %s: start wireguard-go: %w", l.Name, err)
		}
	default:
		return d, fmt.Errorf("wireguard %s: unknown implementation %q", l.Name, l.Impl)
	}
	// After the kernel link exists: a wgctrl client resolves the
	// generic-netlink family when it is opened, and creating the link is
	// what loads a modular WireGuard.
	if err := n.Do(func() error {
		var err error
		d.wgc, err = wgctrl.New()
		return err
	}); err != nil {
		return d, fmt.Errorf("wireguard %s: open wgctrl in %s: %w", l.Name, n.Name, err)
	}
	link, err := d.waitReady(ctx)
	if err != nil {
		return d, err
	}
	if err := d.nl.LinkSetMTU(link, l.MTU); err != nil {
		return d, fmt.Errorf("wireguard %s: set mtu %d: %w", l.Name, l.MTU, err)
	}
	if err := d.nl.AddrAdd(link, &netlink.Addr{IPNet: ipNet(l.Addr)}); err != nil {
		return d, fmt.Errorf("wireguard %s: add address %s: %w", l.Name, l.Addr, err)
	}
	if err := d.nl.LinkSetUp(link); err != nil {
		return d, fmt.Errorf("wireguard %s: bring up: %w", l.Name, err)
	}
	return d, nil
}

// waitReady polls until the link exists in the namespace and wgctrl reaches
// it as the expected implementation. It gives up when ctx ends or the
// userspace daemon exits.
func (d *Device) waitReady(ctx context.Context) (netlink.Link, error) {
	want := wgtypes.LinuxKernel
	if d.Impl == ImplUserspace {
		want = wgtypes.Userspace
	}
	var link netlink.Link
	err := poll(ctx, d.exited(), func() error {
		var err error
		if link, err = d.nl.LinkByName(d.Name); err != nil {
			return fmt.Errorf("link: %w", err)
		}
		dev, err := d.wgc.Device(d.Name)
		if err != nil {
			return fmt.Errorf("wgctrl: %w", err)
		}
		if dev.Type != want {
			return fmt.Errorf("wgctrl reaches a %s device, want %s", dev.Type, want)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wireguard %s: not ready: %w%s", d.Name, err, d.exitNote())
	}
	return link, nil
}

// Configure applies cfg through wgctrl: the same call for both
// implementations.
func (d *Device) Configure(cfg wgtypes.Config) error {
	if err := d.wgc.ConfigureDevice(d.Name, cfg); err != nil {
		return fmt.Errorf("wireguard %s: configure: %w", d.Name, err)
	}
	return nil
}

// Show reads the device's state (peers, counters, handshake times).
func (d *Device) Show() (*wgtypes.Device, error) {
	dev, err := d.wgc.Device(d.Name)
	if err != nil {
		return nil, fmt.Errorf("wireguard %s: read state: %w", d.Name, err)
	}
	return dev, nil
}

// LinkMTU reads the interface's MTU back from the kernel.
func (d *Device) LinkMTU() (int, error) {
	l, err := d.nl.LinkByName(d.Name)
	if err != nil {
		return 0, fmt.Errorf("wireguard %s: read mtu: %w", d.Name, err)
	}
	return l.Attrs().MTU, nil
}

// WaitHandshake polls, with backoff, until the device has completed a
// handshake with peer. It gives up when ctx ends or the daemon exits.
func (d *Device) WaitHandshake(ctx context.Context, peer wgtypes.Key) error {
	err := poll(ctx, d.exited(), func() error {
		dev, err := d.wgc.Device(d.Name)
		if err != nil {
			return err
		}
		for _, p := range dev.Peers {
			if p.PublicKey == peer {
				if p.LastHandshakeTime.IsZero() {
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

// Close removes the device: the wgctrl client is closed, then the
// userspace daemon is stopped by PID (it removes its socket and its TUN
// goes with it) or the kernel link is deleted. A socket or link that
// outlived a daemon killed after the grace period is removed last. Safe to
// call twice and on a partly created device.
func (d *Device) Close() error {
	if d == nil || d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	if d.wgc != nil {
		errs = append(errs, d.wgc.Close())
	}
	if d.Proc != nil {
		errs = append(errs, d.Proc.Stop(stopGrace))
		if err := os.Remove(SocketPath(d.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("wireguard %s: remove socket: %w", d.Name, err))
		}
	}
	if d.nl != nil {
		if l, err := d.nl.LinkByName(d.Name); err == nil {
			if err := d.nl.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
				errs = append(errs, fmt.Errorf("wireguard %s: delete link: %w", d.Name, err))
			}
		}
		d.nl.Close()
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

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
