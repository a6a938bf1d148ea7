package transport_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// TestSshuttleUpClose: the path reaches the fixture sshd only through
// sshuttle, its count of bytes carried moves with that exchange, and Close
// (twice) stops every process it forked and removes the nft tables, the
// route and the address it added, in namespaces that the fixtures share.
func TestSshuttleUpClose(t *testing.T) {
	if _, err := exec.LookPath("sshuttle"); err != nil {
		t.Skip("SKIPPED: sshuttle not installed (scripts/install-deps.sh)")
	}
	e, topo := envTopo(t)
	// The bench account reads the fixtures' authorized_keys under e.Dir,
	// which t.TempDir makes 0700, in a 0700 parent (the run's own
	// directory is 0755).
	for _, d := range []string{filepath.Dir(e.Dir), e.Dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := transport.Lookup("sshuttle")
	tr, err := s.New(transport.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Check(); err != nil {
		t.Skipf("SKIPPED: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := tr.(transport.Preparer).Prepare(ctx, e); err != nil {
		t.Fatal(err)
	}
	p, err := tr.Up(ctx, e)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(e.LogDir, "client-sshuttle.log"))
		t.Fatalf("up: %v\n%s", err, log)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			p.Close()
		}
	})
	if p.Target.Carries != transport.CarriesTCP || p.Target.Port(transport.ServiceIPerf3) != transport.IPerf3Port ||
		!strings.HasPrefix(p.Label, "SSH over sshuttle (nft") || p.Facts.Get("sshuttle") == "" {
		t.Errorf("path %+v", p)
	}
	keys := map[string]int{}
	for _, rp := range p.Procs {
		keys[rp.Key] = rp.PID
	}
	for _, k := range []string{"client / sshuttle", "client / sshuttle --firewall", "client / ssh", "server / sshd", "server / python3"} {
		if keys[k] == 0 {
			t.Errorf("procs %v: no %q", p.Procs, k)
		}
	}
	cli := topo.Roles[topology.Client].NS
	before, err := p.Carried()
	if err != nil {
		t.Fatal(err)
	}
	var banner []byte
	err = cli.Do(func() error {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(p.Target.Host, "22"), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		banner = make([]byte, 8)
		_, err = io.ReadFull(c, banner)
		return err
	})
	if err != nil || string(banner) != "SSH-2.0-" {
		t.Fatalf("sshd through sshuttle: %q, %v", banner, err)
	}
	after, err := p.Carried()
	if err != nil || after-before < 8 {
		t.Errorf("carried %d → %d (%v): want the banner's bytes at least", before, after, err)
	}

	if err := p.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	closed = true
	if err := p.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	res, err := proc.Run(ctx, e.Program(topology.Client, "nft", "nft", "list", "tables"))
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "" {
		t.Errorf("client nft tables after close: %q %v", res.Stdout, err)
	}
	for _, rp := range p.Procs {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", rp.PID)); err == nil && !strings.Contains(string(b), ") Z ") {
			t.Errorf("%s (pid %d) still running", rp.Key, rp.PID)
		}
	}
	cli.Do(func() error {
		routes, _ := netlink.RouteList(nil, netlink.FAMILY_V4)
		for _, r := range routes {
			if r.Dst != nil && r.Dst.IP.String() == p.Target.Host {
				t.Errorf("client route left: %+v", r)
			}
		}
		return nil
	})
	topo.Roles[topology.Server].NS.Do(func() error {
		addrs, _ := netlink.AddrList(nil, netlink.FAMILY_V4)
		for _, a := range addrs {
			if a.IP.String() == p.Target.Host {
				t.Errorf("server address left: %v", a)
			}
		}
		return nil
	})
}
