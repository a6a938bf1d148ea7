package role_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// EndConnection destroys the server's side of a live connection: the
// client's tool sees it end, the server's namespace holds it no more,
// and ending it again (already gone) is no error.
func TestEndConnectionEndsTheServersSide(t *testing.T) {
	_, _, roles := nstest.Roles(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server, client := roles[topology.Server], roles[topology.Client]
	const port = "5999"
	srv, err := server.Start(ctx, server.Program("iperf3-s", "iperf3", "-s", "-4", "-1", "-p", port))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(time.Second)
	if err := proc.WaitUntil(ctx, "iperf3 listening", func() error {
		_, err := established(ctx, server, "state listening")
		return err
	}, srv); err != nil {
		t.Fatal(err)
	}
	cl, err := client.Start(ctx, client.Program("iperf3-c", "iperf3", "-4", "-c", server.Addr().String(), "-p", port, "-t", "25", "-b", "1M"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop(time.Second)
	var conns [][2]netip.AddrPort
	if err := proc.WaitUntil(ctx, "iperf3's connections established", func() error {
		conns, err = established(ctx, server, "state established")
		if err == nil && len(conns) < 2 { // the control connection and one stream
			err = fmt.Errorf("%d established", len(conns))
		}
		return err
	}, cl); err != nil {
		t.Fatal(err)
	}
	for _, c := range conns {
		if err := role.EndConnection(ctx, server, role.Conn{Local: c[0], Remote: c[1]}); err != nil {
			t.Fatal(err)
		}
	}
	// Its own end is 25 s away: a client ending within 10 s was ended.
	ended := time.NewTimer(10 * time.Second)
	defer ended.Stop()
	select {
	case <-cl.Done():
	case <-ended.C:
		t.Fatal("the client's iperf3 went on after its connections were ended on the server")
	}
	if left, err := established(ctx, server, "state established"); err != nil || len(left) != 0 {
		t.Errorf("server still holds %v (%v)", left, err)
	}
	if err := role.EndConnection(ctx, server, role.Conn{Local: conns[0][0], Remote: conns[0][1]}); err != nil {
		t.Errorf("ending a connection already gone: %v", err)
	}
	if err := role.EndConnection(ctx, server, role.Conn{Local: netip.MustParseAddrPort("[::1]:22"), Remote: conns[0][1]}); err == nil {
		t.Error("an IPv6 connection was accepted")
	}
}

// established lists the server role's TCP sockets on port 5999 in the
// given ss state filter as (local, remote) pairs; an empty list is an
// error for "state listening".
func established(ctx context.Context, r *role.Role, state string) ([][2]netip.AddrPort, error) {
	args := append([]string{"-tnH"}, strings.Fields(state)...)
	args = append(args, "( sport = :5999 )")
	res, err := r.Run(ctx, "ss", args...)
	if err != nil {
		return nil, err
	}
	var out [][2]netip.AddrPort
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		local, err1 := netip.ParseAddrPort(f[len(f)-2])
		remote, err2 := netip.ParseAddrPort(f[len(f)-1])
		if err1 != nil || err2 != nil {
			continue // a listener's peer is *:*
		}
		out = append(out, [2]netip.AddrPort{local, remote})
	}
	if state == "state listening" && !strings.Contains(string(res.Stdout), ":5999") {
		return nil, fmt.Errorf("nothing listens on 5999")
	}
	return out, nil
}
