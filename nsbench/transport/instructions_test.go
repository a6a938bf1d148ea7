package transport_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/twnsbench/twnsbench/wg"
)

// With CountInstructions, the server's wireguard-go runs under callgrind
// and the path counts what it does around a transfer: the pings' replies
// are bytes its device sent, and its packet path executed instructions
// for them. Valgrind's start-up makes this slow (seconds), so it runs
// only with TWNSBENCH_VALGRIND=1.
func TestWireGuardCountsInstructions(t *testing.T) {
	nstest.RequireRoot(t)
	if os.Getenv("TWNSBENCH_VALGRIND") != "1" {
		t.Skip("set TWNSBENCH_VALGRIND=1 to run wireguard-go under valgrind")
	}
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Fatalf("TWNSBENCH_VALGRIND=1 but no valgrind: %v", err)
	}
	// Upstream's program: valgrind names its functions (not this test
	// binary's, which the built-in copy would run).
	upstream := filepath.Join(t.TempDir(), wg.DaemonProgram)
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(goTool, "build", "-o", upstream, "golang.zx2c4.com/wireguard").CombinedOutput(); err != nil {
		t.Fatalf("build wireguard-go: %v\n%s", err, out)
	}
	e := env(t)
	e.CountInstructions = true
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := (&transport.WireGuard{Mode: wg.Userspace, Daemon: upstream}).Up(ctx, e)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	defer p.Close()
	if p.Target.Instructions == nil {
		t.Fatalf("no instruction counter; fallbacks %q", p.Fallbacks)
	}
	if !strings.Contains(p.Facts.Get("instructions counted"), "callgrind") {
		t.Errorf("facts %v: want the counted daemon named", p.Facts)
	}
	c := p.Target.Instructions
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := e.Roles[topology.Client].Run(ctx, "ping", "-c", "20", "-i", "0.02", "-s", "1000", "-W", "5", transport.WireGuardServerAddr.Addr().String())
	if err != nil {
		t.Fatalf("ping through the tunnel: %v\n%s", err, res.Stdout)
	}
	n, err := c.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("20 pings: %+v", n)
	// 20 replies of 1028 bytes (IPv4 20, ICMP 8, 1000) at the least.
	if n.SentBytes < 20*1028 || n.Path == 0 || n.Total <= n.Path || n.Method == "" {
		t.Errorf("counted %+v: want ≥ %d bytes sent, a packet path's count above 0 and below the total, a method", n, 20*1028)
	}
}
