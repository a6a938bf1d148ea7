package transport_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/twnsbench/twnsbench/wg"
)

// TestMain doubles as the userspace WireGuard daemon: the transport starts
// this very binary as `wg-userspace IFNAME` inside a namespace.
func TestMain(m *testing.M) {
	wg.MaybeRunUserspace()
	impair.MaybeRunForwarder() // the narrow hop's forwarder (blackhole_test.go)
	nstest.Main(m)
}

// implFallbacks are a path's fallbacks of the implementation, without the
// daemon's: this test binary has no wireguard-go beside it, so its own
// copy runs (TestWireGuardUpstreamDaemon runs upstream's).
func implFallbacks(p *transport.Path) []string {
	var out []string
	for _, f := range p.Fallbacks {
		if !strings.HasPrefix(f, "wireguard-go's daemon is the copy built into twnsbench") {
			out = append(out, f)
		}
	}
	return out
}

// The userspace rows run upstream's wireguard-go program when it is beside
// twnsbench, and its memory is the program's own: idle, its peak RSS is
// below the built-in copy's, which also holds this whole binary.
func TestWireGuardUpstreamDaemon(t *testing.T) {
	nstest.RequireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	upstream := filepath.Join(t.TempDir(), wg.DaemonProgram)
	if out, err := exec.Command(goTool, "build", "-o", upstream, "golang.zx2c4.com/wireguard").CombinedOutput(); err != nil {
		t.Fatalf("build wireguard-go: %v\n%s", err, out)
	}
	v, err := exec.Command(goTool, "list", "-m", "-f", "{{.Version}}", "golang.zx2c4.com/wireguard").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(v))
	idlePeak := func(d wg.Daemon) (int64, *transport.Path) {
		t.Helper()
		saved := wg.UserspaceDaemon
		wg.UserspaceDaemon = func() wg.Daemon { return d }
		defer func() { wg.UserspaceDaemon = saved }()
		p, err := (&transport.WireGuard{Mode: wg.Userspace}).Up(context.Background(), env(t))
		if err != nil {
			t.Fatalf("up: %v", err)
		}
		defer p.Close()
		var peak int64
		for _, rp := range p.Procs {
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", rp.PID))
			if err != nil || exe != d.Argv[0] {
				t.Errorf("%s runs %q (%v), want %s", rp.Key, exe, err, d.Argv[0])
			}
			kb, err := metrics.ReadVmHWM(rp.PID)
			if err != nil {
				t.Fatal(err)
			}
			peak = max(peak, kb)
		}
		return peak, p
	}
	up, p := idlePeak(wg.ChooseDaemon(self, upstream, version))
	if !strings.HasPrefix(p.Facts.Get("wireguard-go daemon"), "upstream's program, "+upstream) || len(p.Fallbacks) != 0 {
		t.Errorf("facts %v, fallbacks %q: want upstream's program named and no fallback", p.Facts, p.Fallbacks)
	}
	builtIn, _ := idlePeak(wg.ChooseDaemon(self, filepath.Join(t.TempDir(), "missing"), version))
	t.Logf("idle VmHWM: upstream's program %d kB, the built-in copy %d kB", up, builtIn)
	if up <= 0 || up >= builtIn {
		t.Errorf("idle VmHWM %d kB upstream, %d kB built in: want upstream's below the copy that carries this binary", up, builtIn)
	}
}

func TestWireGuardNames(t *testing.T) {
	w := &transport.WireGuard{}
	if w.Name() != "wireguard" || w.Label() != "SSH over WireGuard" {
		t.Errorf("name %q label %q", w.Name(), w.Label())
	}
}

// The choice follows the kernel's answer; kernel mode without a kernel
// WireGuard is an unavailable transport (the CLI refuses it earlier).
func TestWireGuardResolveWithFakeKernels(t *testing.T) {
	for _, tt := range []struct {
		mode     wg.Mode
		has      bool
		impl     wg.Impl
		fallback bool
		err      bool
	}{
		{wg.Auto, true, wg.ImplKernel, false, false},
		{wg.Auto, false, wg.ImplUserspace, true, false},
		{wg.Kernel, true, wg.ImplKernel, false, false},
		{wg.Kernel, false, "", false, true},
		{wg.Userspace, true, wg.ImplUserspace, false, false},
	} {
		restore := transport.SetKernelFeature(func(name string) (bool, string) {
			if name != "wireguard" {
				t.Errorf("probed %q", name)
			}
			if tt.has {
				return true, "built in (CONFIG_WIREGUARD=y)"
			}
			return false, "CONFIG_WIREGUARD is not set"
		})
		w := &transport.WireGuard{Mode: tt.mode}
		c, err := w.Resolve()
		checkErr := w.Check()
		restore()
		if tt.err {
			if !errors.Is(err, wg.ErrNoKernel) || !transport.IsUnavailable(checkErr) {
				t.Errorf("%s without kernel WireGuard: resolve %v, check %v", tt.mode, err, checkErr)
			}
			continue
		}
		if err != nil || checkErr != nil || c.Impl != tt.impl || (c.Fallback != "") != tt.fallback {
			t.Errorf("%s, kernel has it %v: %+v, %v, check %v", tt.mode, tt.has, c, err, checkErr)
		}
	}
}

// env builds what the orchestrator gives a transport: the topology, role
// cgroups and the server fixtures, each removed when the test ends.
func env(t *testing.T) *transport.Testbed {
	t.Helper()
	e, _ := envTopo(t)
	return e
}

// envTopo is env with the topology itself, for a test that looks into a
// role's namespace on its own, apart from the code under test.
func envTopo(t *testing.T) (*transport.Testbed, *topology.Topology) {
	t.Helper()
	logDir := t.TempDir()
	topo, _, roles := nstest.Roles(t, logDir)
	dir := t.TempDir()
	e := &transport.Testbed{Prefix: topo.Spec.Prefix, Roles: roles, Dir: dir, LogDir: logDir, Logf: t.Logf}
	// Generous: under emulation (the stock-kernel VM) daemons start slowly.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fx, err := transport.StartFixtures(ctx, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.Stop() })
	e.Fixtures = fx
	return e, topo
}

// wantImpl is what the kernel offers: the kernel's WireGuard when the
// preflight probe finds it, wireguard-go otherwise.
func wantImpl() wg.Impl {
	if has, _ := preflight.KernelFeature("wireguard"); has {
		return wg.ImplKernel
	}
	return wg.ImplUserspace
}

// TestWireGuardUpClose brings the tunnel up in real namespaces with the
// implementation auto picks, checks what the path reports against the
// kernel's and the daemons' own state, and proves Close leaves nothing.
// Where the kernel has WireGuard, userspace mode runs too: wgctrl then asks
// the kernel first and must fall through to the daemon's socket.
func TestWireGuardUpClose(t *testing.T) {
	nstest.RequireRoot(t)
	modes := []wg.Mode{wg.Auto}
	if wantImpl() == wg.ImplKernel {
		modes = append(modes, wg.Userspace)
	}
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) { testUpClose(t, mode) })
	}
}

func testUpClose(t *testing.T, mode wg.Mode) {
	e, topo := envTopo(t)
	w := &transport.WireGuard{Mode: mode}
	if err := w.Check(); err != nil {
		t.Fatalf("check: %v", err)
	}
	c, _ := w.Resolve()
	if mode == wg.Auto && c.Impl != wantImpl() {
		t.Fatalf("auto chose %s, the kernel offers %s", c.Impl, wantImpl())
	}
	p, err := w.Up(context.Background(), e)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			p.Close()
		}
	})
	prefix := e.Prefix
	names := []string{prefix + "-c", prefix + "-s"}

	if p.Target.Host != "10.99.0.1" || p.Target.Port(transport.ServiceSSH) != 22 || !p.Target.Carries.Has(transport.CarriesPackets) {
		t.Errorf("target %+v", p.Target)
	}
	fact := p.Facts.Get("wireguard")
	switch c.Impl {
	case wg.ImplUserspace:
		why, fallbacks := "(userspace; kernel module unavailable)", 1
		if mode == wg.Userspace {
			why, fallbacks = "(userspace; chosen with --wireguard userspace)", 0
		}
		if !strings.HasPrefix(fact, "wireguard-go ") || !strings.HasSuffix(fact, why) {
			t.Errorf("facts: wireguard = %q", fact)
		}
		if fb := implFallbacks(p); len(fb) != fallbacks || fallbacks == 1 && !strings.Contains(fb[0], "userspace wireguard-go instead of kernel WireGuard") {
			t.Errorf("fallbacks %q", p.Fallbacks)
		}
		if len(p.Procs) != 2 || p.Procs[0].Key != "client / wireguard-go" || p.Procs[1].Key != "server / wireguard-go" {
			t.Fatalf("procs %+v", p.Procs)
		}
		for i, name := range []string{topology.Client, topology.Server} {
			pid := p.Procs[i].PID
			pids, err := role.PIDs(context.Background(), e.Roles[name])
			if err != nil || !contains(pids, pid) {
				t.Errorf("%s wireguard-go pid %d not in the role's cgroup (%v, %v)", name, pid, pids, err)
			}
			if _, err := os.Stat(wg.SocketPath(names[i])); err != nil {
				t.Errorf("%s control socket: %v", name, err)
			}
		}
	case wg.ImplKernel:
		if !strings.HasPrefix(fact, "kernel module") || len(p.Fallbacks) != 0 {
			t.Errorf("facts %q, fallbacks %q", fact, p.Fallbacks)
		}
		if len(p.Procs) != 0 || p.InKernel != "kernel WireGuard" {
			t.Errorf("procs %+v, in kernel %q: want no process and the kernel part named", p.Procs, p.InKernel)
		}
	}

	// The tunnel carries traffic: a TCP exchange with sshd through it,
	// and both sides' counters move. wireguard-go counts a packet it sent
	// after the send returns, so the client can hold the SYN-ACK before
	// the server has counted it: the counters are read until they moved,
	// within a bound.
	before := diagnostics(t, p)
	if err := e.Roles[topology.Client].WaitTCP(context.Background(), "10.99.0.1:22", nil); err != nil {
		t.Fatal(err)
	}
	var after map[string]string
	var moved []string
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = proc.WaitUntil(wctx, "both sides' counters moved", func() error {
		after, moved = diagnostics(t, p), nil
		for _, n := range names {
			role := map[byte]string{'c': "client", 's': "server"}[n[len(n)-1]]
			rx0, tx0 := transfer(t, before[role+" wg show "+n+" transfer"])
			rx1, tx1 := transfer(t, after[role+" wg show "+n+" transfer"])
			if rx1 <= rx0 || tx1 <= tx0 || rx0 <= 0 {
				moved = append(moved, fmt.Sprintf("%s transfer rx %d→%d tx %d→%d", n, rx0, rx1, tx0, tx1))
			}
		}
		if len(moved) > 0 {
			return errors.New(strings.Join(moved, "; "))
		}
		return nil
	}, nil)
	for _, m := range moved {
		t.Errorf("%s: want counters that moved", m)
	}
	for _, n := range names {
		role := map[byte]string{'c': "client", 's': "server"}[n[len(n)-1]]
		if got := after[role+" "+n+" mtu"]; got != "1420" {
			t.Errorf("%s mtu = %q, want 1420", n, got)
		}
	}

	closed = true
	if err := p.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if left := wg.Sockets(prefix); len(left) > 0 {
		t.Errorf("sockets left: %v", left)
	}
	for _, rp := range p.Procs {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", rp.PID)); err == nil && strings.Contains(string(b), wg.UserspaceCommand) {
			t.Errorf("%s (pid %d) still runs", rp.Key, rp.PID)
		}
	}
	for i, role := range []string{topology.Client, topology.Server} {
		h, err := topo.Roles[role].NS.Netlink()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.LinkByName(names[i]); err == nil {
			t.Errorf("%s: link %s left", role, names[i])
		}
		h.Close()
	}
}

// TestWireGuardKernelMode: kernel mode uses the kernel's device where the
// kernel has one (in the stock-kernel VM), and is unavailable here.
func TestWireGuardKernelMode(t *testing.T) {
	w := &transport.WireGuard{Mode: wg.Kernel}
	if wantImpl() != wg.ImplKernel {
		_, err := w.Resolve()
		if !errors.Is(err, wg.ErrNoKernel) || !transport.IsUnavailable(w.Check()) {
			t.Fatalf("kernel mode without kernel WireGuard: %v", err)
		}
		return
	}
	e := env(t)
	p, err := w.Up(context.Background(), e)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	defer p.Close()
	// The kernel carries the data: no process of the transport's, its CPU
	// and memory not attributable (Path.InKernel).
	if len(p.Procs) != 0 || p.InKernel != "kernel WireGuard" || !strings.HasPrefix(p.Facts.Get("wireguard"), "kernel module") {
		t.Errorf("procs %+v in-kernel %q facts %v", p.Procs, p.InKernel, p.Facts)
	}
}

func diagnostics(t *testing.T, p *transport.Path) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, d := range p.Diagnose() {
		if strings.HasPrefix(d.Output, "error:") {
			t.Errorf("%s: %s", d.Name, d.Output)
		}
		m[d.Name] = d.Output
	}
	if len(m) != 4 {
		t.Errorf("diagnostics %v: want mtu and transfer for both sides", m)
	}
	return m
}

// transfer parses wg(8)'s `transfer` line: peer, rx bytes, tx bytes.
func transfer(t *testing.T, line string) (rx, tx int64) {
	t.Helper()
	f := strings.Split(line, "\t")
	if len(f) != 3 {
		t.Fatalf("transfer line %q", line)
	}
	rx, err1 := strconv.ParseInt(f[1], 10, 64)
	tx, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("transfer line %q", line)
	}
	return rx, tx
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// When the probe says yes but the kernel cannot make the device (a kernel
// without a readable config), auto falls back to wireguard-go at Up and
// says why.
func TestWireGuardAutoFallsBackWhenKernelDeviceFails(t *testing.T) {
	if wantImpl() == wg.ImplKernel {
		t.Skip("this kernel has WireGuard: creating its device does not fail")
	}
	e, topo := envTopo(t)
	restore := transport.SetKernelFeature(func(string) (bool, string) { return true, "unknown (will be tried)" })
	defer restore()
	w := &transport.WireGuard{}
	if c, err := w.Resolve(); err != nil || c.Impl != wg.ImplKernel {
		t.Fatalf("resolve with a probe that says yes: %+v, %v", c, err)
	}
	p, err := w.Up(context.Background(), e)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	defer p.Close()
	if c, _ := w.Resolve(); c.Impl != wg.ImplUserspace {
		t.Errorf("after the fallback, Resolve says %s", c.Impl)
	}
	if fb := implFallbacks(p); len(fb) != 1 || !strings.Contains(fb[0], "creating the kernel device failed: ") ||
		!strings.Contains(fb[0], "this kernel has no WireGuard") {
		t.Errorf("fallbacks %q", p.Fallbacks)
	}
	if len(p.Procs) != 2 || p.Procs[0].PID <= 0 {
		t.Errorf("procs %+v", p.Procs)
	}
	// The failed kernel attempt left no link behind.
	h, _ := topo.Roles[topology.Server].NS.Netlink()
	defer h.Close()
	links, _ := h.LinkList()
	for _, l := range links {
		if l.Type() == "wireguard" {
			t.Errorf("kernel link %s left", l.Attrs().Name)
		}
	}
}
