package remote_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
)

func TestMain(m *testing.M) { nstest.Main(m) }

func config(l *remotetest.Lab) remote.Config {
	return remote.Config{Identity: l.Identity, KnownHosts: l.KnownHosts, Dial: l.Dial, DialTimeout: 3 * time.Second}
}

func host(role, user string, m *remotetest.Machine) hosts.Host {
	return hosts.Host{Role: role, User: user, Addr: m.Addr.String(), Port: 22}
}

// TestReachMachines: root logins on two emulated machines, each copy
// verified, found on its NIC and removed; the bench login without sudo,
// an unknown and a changed host key, a missing interface and an
// unreachable address are each refused with the host named.
func TestReachMachines(t *testing.T) {
	l := remotetest.New(t, 2)
	t.Setenv("SSH_AUTH_SOCK", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for i, m := range l.Machines {
		role := hosts.Roles[2*i] // client, server
		c, err := remote.Dial(ctx, config(l), host(role, "root", m))
		if err != nil {
			t.Fatal(err)
		}
		ifc, err := c.Iface(ctx)
		if err != nil || ifc.Name != remotetest.Iface || ifc.ReachedBy != m.Addr || len(ifc.IPv4) != 1 {
			t.Errorf("%s: interface %+v, %v; want %s holding %s", m.Name, ifc, err, remotetest.Iface, m.Addr)
		}
		cp, err := c.Install(ctx, l.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(cp.Path); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("copy %s: %v %v, want mode 0700", cp.Path, st.Mode(), err)
		}
		if _, err := c.Install(ctx, l.Prefix); err == nil || !strings.Contains(err.Error(), "File exists") {
			t.Errorf("a second copy into the same directory: %v, want it refused", err)
		}
		// A build's program beside the copy: root's, mode 0700, its
		// sha256 read there; never written over one already there.
		prog, err := cp.Add(ctx, cp.Path, "build-a-prog")
		if err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(prog.Path); err != nil || st.Mode().Perm() != 0o700 || prog.Path != cp.Dir+"/build-a-prog" || prog.SHA256 != cp.SHA256 {
			t.Errorf("program %+v: %v %v, want mode 0700 beside the copy, the copy's sha256 %s", prog, st.Mode(), err, cp.SHA256)
		}
		if _, err := cp.Add(ctx, cp.Path, "build-a-prog"); err == nil || !strings.Contains(err.Error(), "File exists") {
			t.Errorf("a second program of the same name: %v, want it refused", err)
		}
		if err := cp.Remove(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(cp.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("copy left behind: %s (%v)", cp.Dir, err)
		}
		c.Close()
	}

	m0 := l.Machines[0]
	refusals := map[string]struct {
		cfg  remote.Config
		h    hosts.Host
		want []string
	}{
		"no sudo": {config(l), host("client", remotetest.BenchUser, m0), []string{"bench@10.226.0.10:22: sudo needs a password; add a NOPASSWD rule (see docs/hosts.md)"}},
		"unknown key": {func() remote.Config { c := config(l); c.KnownHosts = l.KnownHostsWithout(t, 0); return c }(),
			host("client", "root", m0), []string{"root@10.226.0.10:22: unknown host key ssh-ed25519 SHA256:", "ssh-keyscan -p 22 -t ed25519 10.226.0.10 >>"}},
		"changed key": {func() remote.Config { c := config(l); c.KnownHosts = l.KnownHostsChanged(t, 0); return c }(),
			host("client", "root", m0), []string{"root@10.226.0.10:22: HOST KEY CHANGED: the host offers ssh-ed25519 SHA256:", "ssh-keygen -R 10.226.0.10"}},
		"unreachable": {config(l), hosts.Host{Role: "client", User: "root", Addr: l.Unreachable(), Port: 22},
			[]string{"root@10.226.0.99:22: unreachable"}},
	}
	for name, tc := range refusals {
		start := time.Now()
		c, err := remote.Dial(ctx, tc.cfg, tc.h)
		t.Logf("%s after %s: %v", name, time.Since(start).Round(time.Millisecond), err)
		if err == nil {
			c.Close()
			t.Errorf("%s: connected, want a refusal", name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant it to contain %q", name, err, w)
			}
		}
		if took := time.Since(start); took > tc.cfg.DialTimeout+2*time.Second {
			t.Errorf("%s: refused after %s, want within the dial bound %s", name, took, tc.cfg.DialTimeout)
		}
		if strings.Contains(err.Error(), m0.HostKey.Type()) && name == "changed key" {
			var hke *remote.HostKeyError
			if !errors.As(err, &hke) || !hke.Changed() {
				t.Errorf("changed key: %T, want a *HostKeyError with Known set", err)
			}
		}
	}

	h := host("client", "root", m0)
	h.Iface = "nope0"
	c, err := remote.Dial(ctx, config(l), h)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Iface(ctx); err == nil || !strings.Contains(err.Error(), `root@10.226.0.10:22: no interface "nope0" (it has: eth0, lo)`) {
		t.Errorf("missing interface: %v", err)
	}
}

// TestDeadLinkDetected: with the cable cut, keepalives close the
// connection within MissedKeepalives intervals and say why.
func TestDeadLinkDetected(t *testing.T) {
	l := remotetest.New(t, 1)
	t.Setenv("SSH_AUTH_SOCK", "")
	cfg := config(l)
	cfg.KeepaliveInterval = 200 * time.Millisecond
	c, err := remote.Dial(context.Background(), cfg, host("server", "root", l.Machines[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l.Cut(t, 0)
	start := time.Now()
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	bound := (remote.MissedKeepalives+1)*cfg.KeepaliveInterval + time.Second
	select {
	case <-done:
	case <-time.After(10 * bound):
		t.Fatalf("connection still open %s after the cut", 10*bound)
	}
	if took := time.Since(start); took > bound {
		t.Errorf("dead link noticed after %s, want within %s", took, bound)
	}
	if err := c.Dead(); err == nil || !strings.Contains(err.Error(), "no keepalive answer") {
		t.Errorf("Dead() = %v", err)
	}
}

// TestSudoLoginsCopyIsRoots: a login that reaches root through sudo gets
// a copy that root wrote and owns, in a directory only root may enter, so
// the login cannot swap the binary root runs; root runs it; Remove takes
// it; and the stale-copy sweep takes one left behind.
func TestSudoLoginsCopyIsRoots(t *testing.T) {
	l := remotetest.New(t, 1)
	t.Setenv("SSH_AUTH_SOCK", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := l.Machines[0]
	c, err := remote.Dial(ctx, config(l), host("client", remotetest.SudoUser, m))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cp, err := c.Install(ctx, l.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	rootOnly := func(p string, mode os.FileMode) {
		t.Helper()
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 0 || st.Mode() != mode {
			t.Errorf("%s: uid %d mode %v, want root's, %v", p, uid, st.Mode(), mode)
		}
	}
	rootOnly(cp.Dir, os.ModeDir|0o700)
	rootOnly(cp.Path, 0o700)
	// sudo -n as the login prefixes the copy's command, and it runs as root.
	if out := l.Exec(t, m, "su -s /bin/sh "+remotetest.SudoUser+" -c 'sudo -n id -u'"); out != "0" {
		t.Errorf("the sudo login's sudo -n id -u: %q, want 0", out)
	}
	if !strings.HasPrefix(cp.Command("agent"), "sudo -n ") {
		t.Errorf("the copy runs as %q, want through sudo -n", cp.Command("agent"))
	}
	if err := cp.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cp.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("copy left behind: %s (%v)", cp.Dir, err)
	}

	// A copy a killed orchestrator left: the sweep knows it for Install's.
	cp, err = c.Install(ctx, l.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-remote.StaleAge - time.Minute)
	if err := os.Chtimes(cp.Dir, old, old); err != nil {
		t.Fatal(err)
	}
	removed, err := remote.RemoveStaleCopies()
	if err != nil {
		t.Error(err)
	}
	if !slices.Contains(removed, cp.Dir) {
		t.Errorf("the sweep removed %q, want %s among them", removed, cp.Dir)
		cp.Remove()
	}
}
