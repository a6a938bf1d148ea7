package wg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/ipc"
	"golang.zx2c4.com/wireguard/tun"
)

// UserspaceCommand is the hidden subcommand that runs ServeUserspace:
// `twnsbench wg-userspace IFNAME`. The harness starts it through the
// namespace launcher, so the daemon is born in its role's namespace and
// cgroup and stays the harness's direct child.
const UserspaceCommand = "wg-userspace"

// MaybeRunUserspace serves the daemon and exits when this process was
// started as `PROGRAM wg-userspace IFNAME` (a test binary standing in for
// twnsbench); otherwise it returns at once. Call it first in TestMain.
func MaybeRunUserspace() {
	if len(os.Args) != 3 || os.Args[1] != UserspaceCommand {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := ServeUserspace(ctx, os.Args[2])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// ServeUserspace is wireguard-go's daemon, in the foreground, in the calling
// process's network namespace: it creates TUN device name, opens its UAPI
// socket SocketPath(name) and serves it until ctx ends (SIGTERM), the
// socket is removed, or the device dies. On the way out it removes the
// socket and closes the device (the kernel then deletes the interface).
// The process must not switch namespaces while it runs: its TUN device and
// its UDP sockets belong to the namespace they were opened in.
func ServeUserspace(ctx context.Context, name string) error {
	if err := checkIfName(name); err != nil {
		return fmt.Errorf("wireguard-go: %w", err)
	}
	tdev, err := tun.CreateTUN(name, device.DefaultMTU)
	if err != nil {
		return fmt.Errorf("wireguard-go: create tun %s: %w", name, err)
	}
	if real, err := tdev.Name(); err != nil || real != name {
		tdev.Close()
		return fmt.Errorf("wireguard-go: tun device is %q, want %q (%v)", real, name, err)
	}
	f, err := ipc.UAPIOpen(name)
	if err != nil {
		tdev.Close()
		return fmt.Errorf("wireguard-go: open %s: %w", SocketPath(name), err)
	}
	logger := device.NewLogger(device.LogLevelError, "("+name+") ")
	dev := device.NewDevice(tdev, conn.NewDefaultBind(), logger)
	uapi, err := ipc.UAPIListen(name, f)
	if err != nil {
		dev.Close()
		f.Close()
		os.Remove(SocketPath(name))
		return fmt.Errorf("wireguard-go: listen on %s: %w", SocketPath(name), err)
	}
	accepted := make(chan error, 1)
	go func() {
		for {
			c, err := uapi.Accept()
			if err != nil {
				accepted <- err
				return
			}
			go dev.IpcHandle(c)
		}
	}()
	fmt.Printf("wireguard-go %s: %s up, pid %d, control socket %s\n", GoVersion(), name, os.Getpid(), SocketPath(name))

	var result error
	select {
	case <-ctx.Done():
	case err := <-accepted:
		result = fmt.Errorf("wireguard-go: control socket: %w", err)
	case <-dev.Wait():
		result = errors.New("wireguard-go: device closed")
	}
	// Socket first, so no client talks to a closing device; then the
	// device, whose TUN takes the interface with it.
	uapi.Close() // unlinks the socket
	dev.Close()
	if err := os.Remove(SocketPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		result = errors.Join(result, fmt.Errorf("wireguard-go: remove socket: %w", err))
	}
	fmt.Printf("wireguard-go: %s down\n", name)
	return result
}
