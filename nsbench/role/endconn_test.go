package role_test

import (
	"context"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// EndConnection destroys the server's side of a live connection: the
// client sees it end at once, and ending it again (already gone) is no
// error and leaves the server's listener as it was: it still accepts.
func TestEndConnectionEndsTheServersSide(t *testing.T) {
	_, _, roles := nstest.Roles(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server, client := roles[topology.Server], roles[topology.Client]
	addr := netip.AddrPortFrom(server.Addr(), 5998)
	var ln net.Listener
	inNS(t, server, func() (err error) { ln, err = net.Listen("tcp4", addr.String()); return err })
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var conn net.Conn
	inNS(t, client, func() (err error) { conn, err = (&net.Dialer{}).DialContext(ctx, "tcp4", addr.String()); return err })
	defer conn.Close()
	srv := <-accepted
	defer srv.Close()
	local, remote := netip.MustParseAddrPort(srv.LocalAddr().String()), netip.MustParseAddrPort(srv.RemoteAddr().String())
	if err := role.EndConnection(ctx, server, role.Conn{Local: local, Remote: remote}); err != nil {
		t.Fatal(err)
	}
	// The server's end is gone: the client's next read ends in a reset,
	// where it would wait out its deadline on a live connection.
	srv.SetDeadline(time.Now().Add(10 * time.Second))
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("x")); err == nil {
		if _, err = conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("the client's connection went on after the server's end was ended: %v", err)
		}
	}
	if err := role.EndConnection(ctx, server, role.Conn{Local: local, Remote: remote}); err != nil {
		t.Errorf("ending a connection already gone: %v", err)
	}
	var again net.Conn
	inNS(t, client, func() (err error) { again, err = (&net.Dialer{}).DialContext(ctx, "tcp4", addr.String()); return err })
	again.Close()
	if err := role.EndConnection(ctx, server, role.Conn{Local: netip.MustParseAddrPort("[::1]:22"), Remote: remote}); err == nil {
		t.Error("an IPv6 connection was accepted")
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// inNS runs fn on a thread in r's network namespace: a socket it makes
// stays in that namespace.
func inNS(t *testing.T, r *role.Role, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		target, err := netns.GetFromPath(r.Program("x").NetNS)
		if err != nil {
			done <- err
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			done <- err
			return
		}
		done <- fn()
	}()
	if err := <-done; err != nil {
		t.Fatalf("in %s's namespace: %v", r.Name(), err)
	}
}
