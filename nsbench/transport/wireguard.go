package transport

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/callgrind"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/wg"
)

// The tunnel as in the reference: the server listens on WireGuardPort, the
// client reaches it at the server's veth address and keeps the path alive.
var (
	WireGuardServerAddr = innerPrefix("wireguard, wireguard-kernel, wireguard-go", 1)
	WireGuardClientAddr = innerPrefix("wireguard, wireguard-kernel, wireguard-go", 2)
)

const (
	WireGuardPort      = 51820
	WireGuardKeepalive = 25 * time.Second

	// wireguardReady bounds the whole set-up: devices, handshake (one
	// lost initiation is retried after 5 s) and sshd through the tunnel;
	// under emulation (the stock-kernel VM) it takes seconds.
	wireguardReady = time.Minute
)

// tunDevice is what wireguard-go needs from the kernel.
const tunDevice = "/dev/net/tun"

// kernelFeature probes the running kernel (a variable so that tests can
// play a kernel this machine is not).
var kernelFeature = preflight.KernelFeature

// WireGuard is SSH over a WireGuard tunnel between the client and server
// namespaces: every instrument aims at the server's tunnel address. The
// kernel's WireGuard is used when the kernel has it (or Mode says so),
// else wireguard-go, run from this binary inside each namespace.
type WireGuard struct {
	Mode wg.Mode // "" is wg.Auto
	MTU  int     // 0 is wg.DefaultMTU
	// Daemon is the wireguard-go program of a userspace device (the
	// wireguard-go transport's --wireguard-go); "" is
	// wg.UserspaceDaemon's choice, upstream's beside twnsbench or the
	// copy built in.
	Daemon string
	// name and label tell the registered variants apart: "wireguard"
	// (the kernel's where present, else wireguard-go), "wireguard-kernel"
	// and "wireguard-go".
	name, label string

	choice *wg.Choice
}

var _ Transport = (*WireGuard)(nil)

// HostNeeds: the kernel's WireGuard where the kernel has it, when the mode
// takes it; the userspace devices are built into twnsbench, and wgctrl
// needs no wg program.
func (w *WireGuard) HostNeeds() HostNeeds {
	use := preflight.KernelUse{Check: "kernel wireguard", Feature: "wireguard"}
	switch w.Mode {
	case wg.Auto, "":
		use.Without = "userspace wireguard-go will be used"
	case wg.Kernel:
		use.Without = w.Name() + " cannot run"
	default:
		return HostNeeds{}
	}
	return HostNeeds{Kernel: []preflight.KernelUse{use}}
}

// wireguardSpec is the reference's row: one WireGuard, the kernel's where
// the kernel has it (--wireguard chooses otherwise).
var wireguardSpec = Spec{
	Name:      "wireguard",
	Holds:     []string{"WireGuard " + innerRange("wireguard, wireguard-kernel, wireguard-go").String() + ", udp/51820"},
	Summary:   "SSH over WireGuard: the kernel's where present, else wireguard-go built into twnsbench (--wireguard)",
	InDefault: true,
	Sets:      []string{"seed-002"},
	Options: []Option{{Name: "wireguard", Value: string(wg.Auto),
		Usage: "WireGuard implementation of the wireguard transport: auto (the kernel's when it has WireGuard, else wireguard-go), kernel, or userspace (wireguard-go, built into twnsbench)"},
		wireguardMTUOption},
	// wireguard-go's control sockets (every WireGuard row's: the sockets
	// are named by run and role, not by row).
	CleanLeftovers: func(run string) ([]string, error) {
		socks, err := wg.CleanSockets(run)
		for i, s := range socks {
			socks[i] = "socket " + s
		}
		return socks, err
	},
	New: func(c Config) (Transport, error) {
		mode, err := wg.ParseMode(c.Options["wireguard"])
		if err != nil {
			return nil, err
		}
		mtu, err := wireguardMTU(c)
		if err != nil {
			return nil, err
		}
		w := &WireGuard{Mode: mode, MTU: mtu}
		// Kernel mode on a kernel without WireGuard is bad input.
		if _, err := w.Resolve(); err != nil {
			return nil, err
		}
		return w, nil
	},
}

// wireguardKernelSpec and wireguardGoSpec put both implementations side by
// side in one run.
var (
	wireguardKernelSpec = Spec{
		Name:    "wireguard-kernel",
		Holds:   []string{"WireGuard " + innerRange("wireguard, wireguard-kernel, wireguard-go").String() + ", udp/51820"},
		Summary: "SSH over kernel WireGuard (needs a kernel with WireGuard)",
		Options: []Option{wireguardMTUOption},
		New: func(c Config) (Transport, error) {
			mtu, err := wireguardMTU(c)
			return &WireGuard{Mode: wg.Kernel, name: "wireguard-kernel", label: "SSH over WireGuard (kernel)", MTU: mtu}, err
		},
	}
	wireguardGoSpec = Spec{
		Name:    "wireguard-go",
		Holds:   []string{"WireGuard " + innerRange("wireguard, wireguard-kernel, wireguard-go").String() + ", udp/51820"},
		Summary: "SSH over wireguard-go, built into twnsbench (needs /dev/net/tun)",
		Options: []Option{{Name: "wireguard-go", File: true, Roles: []string{topology.Client, topology.Server},
			Usage: "wireguard-go program of the wireguard-go transport (default: bin/wireguard-go beside twnsbench at the version twnsbench is built with, else the copy built into twnsbench)"},
			wireguardMTUOption},
		New: func(c Config) (Transport, error) {
			mtu, err := wireguardMTU(c)
			return &WireGuard{Mode: wg.Userspace, name: "wireguard-go", label: "SSH over WireGuard (wireguard-go)", Daemon: c.Options["wireguard-go"], MTU: mtu}, err
		},
	}
)

// wireguardMTUOption sets the tunnel devices' MTU of every WireGuard row
// (one flag: the three specs share it word for word). A tunnel knows its
// own overhead, so it is the tunnel that is told the MTU, as an operator
// would set it: under a narrow hop of N bytes, N - 60 (IPv4's 20, UDP's 8
// and WireGuard's 32) makes every outer packet fit, e.g. 1220 under 1280.
var wireguardMTUOption = Option{Name: "wireguard-mtu", Value: strconv.Itoa(wg.DefaultMTU),
	Usage: fmt.Sprintf("MTU of the WireGuard rows' tunnel devices, %d to %d: an outer IPv4 packet is 60 bytes more, so 1220 fits a narrow hop of 1280 (--wan …:mtu=1280)", minWireGuardMTU, maxWireGuardMTU)}

// The tunnel MTUs --wireguard-mtu takes: IPv4's minimum, and the largest
// whose outer packets fit the role links' 1500.
const (
	minWireGuardMTU = 576
	maxWireGuardMTU = 1500 - wireguardOverhead
	// wireguardOverhead is what WireGuard adds to a packet over IPv4:
	// IPv4 20, UDP 8, WireGuard's header 16 and tag 16.
	wireguardOverhead = 60
)

// wireguardMTU is c's --wireguard-mtu, 0 when unset (wg.DefaultMTU).
func wireguardMTU(c Config) (int, error) {
	v := c.Options[wireguardMTUOption.Name]
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < minWireGuardMTU || n > maxWireGuardMTU {
		return 0, fmt.Errorf("--wireguard-mtu %q: want a number of bytes from %d to %d", v, minWireGuardMTU, maxWireGuardMTU)
	}
	return n, nil
}

func (w *WireGuard) Name() string {
	if w.name == "" {
		return wireguardSpec.Name
	}
	return w.name
}

func (w *WireGuard) Label() string {
	if w.label == "" {
		return "SSH over WireGuard"
	}
	return w.label
}

// About says where the tunnel's encryption CPU shows, which depends on the
// implementation.
func (w *WireGuard) About() string {
	c, err := w.Resolve()
	if err != nil {
		return ""
	}
	if c.Impl == wg.ImplKernel {
		return "is a direct peer-to-peer link between the client and server namespaces; kernel WireGuard encrypts in kernel threads, so its CPU shows up only in the host-wide CPU-seconds (and so in Gbit/s per busy core), never in a role's cgroup."
	}
	return "is a direct peer-to-peer link between the client and server namespaces, here " + wg.Describe(c, wg.KernelVersion(), w.goVersion()) +
		": one wireguard-go process per namespace (" + w.daemon(nil, "").Describe() + "), in its role's cgroup, so its encryption CPU counts in the client and server CPU-seconds (kernel WireGuard's would show only host-wide)."
}

// Resolve chooses the implementation from Mode and the running kernel,
// once; later calls return the same choice. Kernel mode on a kernel
// without WireGuard is an error wrapping wg.ErrNoKernel, which the CLI
// turns into a refusal before anything is created.
func (w *WireGuard) Resolve() (wg.Choice, error) {
	if w.choice != nil {
		return *w.choice, nil
	}
	has, how := kernelFeature("wireguard")
	c, err := wg.Choose(w.Mode, has, how)
	if err != nil {
		return wg.Choice{}, err
	}
	w.choice = &c
	return c, nil
}

func (w *WireGuard) Check() error {
	c, err := w.Resolve()
	if err != nil && w.name != "" && errors.Is(err, wg.ErrNoKernel) {
		_, how := kernelFeature("wireguard")
		return &UnavailableError{Transport: w.Name(), Reason: "this kernel has no WireGuard (" + how + ")",
			Fix: "run wireguard-go instead, or use a kernel with CONFIG_WIREGUARD (make vmtest runs Debian's)"}
	}
	if err != nil {
		return &UnavailableError{Transport: w.Name(), Reason: err.Error()}
	}
	if w.Daemon != "" {
		if err := checkExecutable(w.Daemon); err != nil {
			return &UnavailableError{Transport: w.Name(), Reason: "--wireguard-go " + w.Daemon + ": " + err.Error()}
		}
	}
	if c.Impl == wg.ImplUserspace {
		if _, err := os.Stat(tunDevice); err != nil {
			return &UnavailableError{Transport: w.Name(),
				Reason: "wireguard-go needs " + tunDevice + ": " + err.Error(),
				Fix:    "load the tun module (modprobe tun) or use a kernel with CONFIG_TUN"}
		}
	}
	return nil
}

// Up builds the tunnel (wg.Up: devices in the server and client roles,
// configuration, handshake), then waits until the server's
// sshd accepts through it. Userspace daemons run in their role's cgroup,
// so their CPU counts for that role.
func (w *WireGuard) Up(ctx context.Context, tb *Testbed) (*Path, error) {
	c, err := w.Resolve()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, wireguardReady)
	defer cancel()
	t0 := time.Now()
	tun, err := w.tunnel(ctx, tb, c)
	if errors.Is(err, wg.ErrNoKernel) && c.Impl == wg.ImplKernel && w.Mode != wg.Kernel {
		// The probe could not be sure (a kernel without a readable
		// config, say); creating the device was the real test. Auto
		// falls back as it would have had the probe known.
		c, _ = wg.Choose(wg.Auto, false, "creating the kernel device failed: "+err.Error())
		w.choice = &c
		t0 = time.Now()
		tun, err = w.tunnel(ctx, tb, c)
	}
	if err != nil {
		return nil, err
	}
	handshake := time.Since(t0)
	host := WireGuardServerAddr.Addr().String()
	if err := tb.Roles[topology.Client].WaitTCP(ctx, net.JoinHostPort(host, strconv.Itoa(SSHPort)), nil); err != nil {
		return nil, errors.Join(fmt.Errorf("sshd through the tunnel: %w", err), tun.Close())
	}
	desc := wg.Describe(c, wg.KernelVersion(), w.goVersion())
	if tb.Logf != nil {
		tb.Logf("%s: %s, %s ↔ %s, handshake after %.0f ms", w.Label(), desc, tun.Client.Name, tun.Server.Name,
			float64(handshake)/float64(time.Millisecond))
	}
	p := &Path{
		Target:   DirectTarget(host),
		Facts:    results.Facts{{Key: wireguardSpec.Name, Label: "WireGuard", Value: desc, Implementation: true}},
		Diagnose: func() []Diagnostic { return wireguardDiagnostics(tun) },
		Carried:  LinkBytes(tb.Roles[topology.Client], tun.Client.Name),
		Restarts: Restarts{PieceServer: wgServer{tun}},
		Close:    tun.Close,
	}
	if c.Fallback != "" {
		p.Fallbacks = []string{c.Fallback}
	}
	if w.MTU != 0 && w.MTU != wg.DefaultMTU {
		p.Facts = append(p.Facts, results.Fact{Key: wireguardMTUOption.Name, Label: "WireGuard tunnel MTU", Value: strconv.Itoa(w.MTU)})
	}
	if c.Impl == wg.ImplKernel {
		p.InKernel = "kernel WireGuard"
	} else {
		daemon := w.daemon(tb, topology.Client)
		p.Facts = append(p.Facts, results.Fact{Key: "wireguard-go daemon", Value: daemon.Describe()})
		if w.Daemon != "" {
			// The chosen program's own version, not the one built in.
			p.Facts = append(p.Facts, results.Fact{Key: "wireguard-go", Value: goVersion(w.Daemon)})
		}
		if !daemon.Upstream {
			p.Fallbacks = append(p.Fallbacks, "wireguard-go's daemon is the copy built into twnsbench ("+daemon.Fallback+
				"): its peak RSS also holds twnsbench's own binary, about 6.5 MiB more than upstream's program when idle")
		}
		switch why := w.uncounted(tb); {
		case w.counted(tb, c):
			p.Target.Instructions = newDaemonCounter(tb.Roles[topology.Server], tun.Server.Proc, callgrindOut(tb), tun.Server.Name, wireguardGoPath)
			p.Facts = append(p.Facts, results.Fact{Key: "instructions counted", Label: "Instructions counted", Value: "the server's wireguard-go under valgrind's callgrind (" + strings.Join(callgrind.GoEnv, " ") + "), on the paths of the instruments that count it only"})
		case tb.CountInstructions:
			p.Fallbacks = append(p.Fallbacks, why)
		}
		p.Procs = []RSSProc{
			tb.Proc(topology.Client, "wireguard-go", tun.Client.Proc),
			tb.Proc(topology.Server, "wireguard-go", tun.Server.Proc),
		}
	}
	return p, nil
}

// tunnel builds the tunnel with implementation c.
func (w *WireGuard) tunnel(ctx context.Context, tb *Testbed, c wg.Choice) (*wg.Tunnel, error) {
	server, err := w.end(tb, c, topology.Server, WireGuardServerAddr)
	if err != nil {
		return nil, err
	}
	client, err := w.end(tb, c, topology.Client, WireGuardClientAddr)
	if err != nil {
		return nil, err
	}
	return wg.Up(ctx, wg.TunnelSpec{
		Server:    server,
		Client:    client,
		Endpoint:  netip.AddrPortFrom(tb.Roles[topology.Server].Addr(), WireGuardPort),
		Keepalive: WireGuardKeepalive,
	})
}

// end describes one side: its role (the transport's leaf of it, where
// wireguard-go runs and logs to the run's log directory) and its device.
func (w *WireGuard) end(tb *Testbed, c wg.Choice, role string, addr netip.Prefix) (wg.End, error) {
	r, ok := tb.Roles[role]
	if !ok {
		return wg.End{}, fmt.Errorf("wireguard: the topology has no %s role", role)
	}
	name, err := wg.IfName(tb.Prefix, role)
	if err != nil {
		return wg.End{}, err
	}
	l := wg.Link{Name: name, Impl: c.Impl, MTU: w.MTU, Addr: addr}
	if w.Daemon != "" {
		d := wg.ProgramDaemon(tb.ProgramAt(role, w.Daemon))
		l.Daemon = &d
	}
	if w.counted(tb, c) && role == topology.Server {
		d := w.daemon(tb, role)
		d.Argv = callgrind.Argv(callgrindOut(tb), d.Argv)
		d.Env = append(append([]string{}, d.Env...), callgrind.GoEnv...)
		l.Daemon = &d
	}
	return wg.End{Role: r, Link: l}, nil
}

// counted says whether the server's daemon runs under valgrind, its
// instructions counted (Testbed.CountInstructions): it sends what the
// client's iperf3 -R receives.
func (w *WireGuard) counted(tb *Testbed, c wg.Choice) bool {
	return tb.CountInstructions && c.Impl == wg.ImplUserspace && w.uncounted(tb) == ""
}

// uncounted says why the server's daemon cannot be counted, "" when it
// can. Valgrind reads no function names from twnsbench's own binary (Go
// 1.26, valgrind 3.19: every Go function an address), so the copy built
// in cannot tell its packet path apart; upstream's program can.
func (w *WireGuard) uncounted(tb *Testbed) string {
	if why := countable(tb); why != "" {
		return why
	}
	if d := w.daemon(tb, topology.Server); !d.Upstream {
		return "instructions not counted: wireguard-go's daemon is the copy built into twnsbench, whose functions valgrind cannot name (`make build` builds upstream's program, or --wireguard-go names one)"
	}
	return ""
}

// callgrindOut is where the counted daemon's dumps go.
func callgrindOut(tb *Testbed) string { return filepath.Join(tb.Dir, "callgrind-wireguard-go.out") }

// wireguardGoPath are the functions of wireguard-go's packet path, by
// package: the device's queues and timers, the TUN device's offloads and
// checksums, and the ciphers. Left out are the Go runtime (its scheduler
// spins as timing allows) and the UDP bind's batching (how many packets
// each system call carries changes with timing), which a sample's count
// of the whole daemon still holds.
var wireguardGoPath = []string{"golang.zx2c4.com/wireguard/device.", "golang.zx2c4.com/wireguard/tun.", "golang.org/x/crypto/"}

// daemon is the userspace daemon w's devices run in role of tb (nil tb:
// on this machine).
func (w *WireGuard) daemon(tb *Testbed, role string) wg.Daemon {
	switch {
	case tb == nil && w.Daemon != "":
		return wg.ProgramDaemon(w.Daemon)
	case tb == nil:
		return wg.UserspaceDaemon().At("")
	case w.Daemon != "":
		return wg.ProgramDaemon(tb.ProgramAt(role, w.Daemon))
	}
	return wg.UserspaceDaemon().At(tb.Roles[role].Self())
}

// goVersion is the wireguard-go version a userspace device runs: the
// chosen program's, else the one built into twnsbench.
func (w *WireGuard) goVersion() string {
	if w.Daemon != "" {
		if bi, err := buildinfo.ReadFile(w.Daemon); err == nil {
			return bi.Main.Version
		}
		return "(unknown version)"
	}
	return wg.GoVersion()
}

// wgServer restarts the tunnel's server side: its device removed
// (wireguard-go stopped, or the kernel's link deleted) and made again with
// the same key, port and peer (wg.Tunnel.StartServer).
type wgServer struct{ t *wg.Tunnel }

var _ Restarter = wgServer{}

func (s wgServer) Stop(context.Context) error      { return s.t.StopServer() }
func (s wgServer) Start(ctx context.Context) error { return s.t.StartServer(ctx) }
func (s wgServer) What() string {
	if s.t.Server.Impl == wg.ImplKernel {
		return "the server's kernel WireGuard device, deleted and made again with its key, port and peer"
	}
	return "the server's wireguard-go, stopped and started again with its key, port and peer"
}

// wireguardDiagnostics reads each side's MTU and its peer's transfer
// counters, in wg(8)'s `transfer` format (peer, rx bytes, tx bytes).
func wireguardDiagnostics(t *wg.Tunnel) []Diagnostic {
	var ds []Diagnostic
	for _, side := range []struct {
		role string
		d    *wg.Device
	}{{topology.Client, t.Client}, {topology.Server, t.Server}} {
		tr, err := side.d.Transfer()
		if err != nil {
			ds = append(ds, Diagnostic{Name: side.role + " wg show " + side.d.Name, Output: "error: " + err.Error()})
			continue
		}
		ds = append(ds,
			Diagnostic{Name: side.role + " " + tr.Name + " mtu", Output: strconv.Itoa(tr.MTU)},
			Diagnostic{Name: side.role + " wg show " + tr.Name + " transfer",
				Output: fmt.Sprintf("%s\t%d\t%d", tr.Peer, tr.RxBytes, tr.TxBytes)})
	}
	return ds
}
