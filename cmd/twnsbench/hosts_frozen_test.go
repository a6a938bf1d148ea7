package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// A frozen agent (SIGSTOP: its sshd still answers the SSH-level
// keepalive) is noticed by the link's one keepalive, the agent's pings:
// the link is closed within 3 pings plus one interval, saying why, and
// the agent, resumed, finds its stream gone and removes its copy.
func TestFrozenAgentClosesTheLink(t *testing.T) {
	nstest.RequireRoot(t)
	lab := remotetest.New(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := remote.Config{Identity: lab.Identity, KnownHosts: lab.KnownHosts, Dial: lab.Dial, DialTimeout: 3 * time.Second}
	conn, err := remote.Dial(ctx, cfg, hosts.Host{Role: topology.Server, User: "root", Addr: lab.Machines[0].Addr.String(), Port: 22})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cp, err := conn.Install(ctx, lab.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(cp.Dir) }) // the machine shares this /var/tmp
	agent, err := conn.StartAgent(cp, role.Scope(lab.Prefix, topology.Server))
	if err != nil {
		t.Fatal(err)
	}
	pid := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		exes, _ := filepath.Glob("/proc/[0-9]*/exe")
		for _, e := range exes {
			if p, _ := os.Readlink(e); p == cp.Path {
				pid, _ = strconv.Atoi(filepath.Base(filepath.Dir(e)))
			}
		}
		if pid != 0 {
			break
		}
	}
	if pid == 0 {
		t.Fatalf("no process runs %s", cp.Path)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	frozen := time.Now()
	closed := make(chan struct{})
	go func() { conn.Wait(); close(closed) }()
	bound := 4*role.PingInterval + 2*time.Second
	select {
	case <-closed:
	case <-time.After(bound):
		t.Fatalf("link still open %v after the agent froze", bound)
	}
	t.Logf("link closed %.1f s after the agent froze: %v", time.Since(frozen).Seconds(), conn.Dead())
	if err := conn.Dead(); err == nil || !strings.Contains(err.Error(), "no answer to a ping") {
		t.Errorf("Dead() = %v, want the pings' silence", err)
	}
	if err := agent.Wire.Err(); err == nil {
		t.Error("the wire to a frozen agent still open")
	}
	syscall.Kill(pid, syscall.SIGCONT)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(cp.Dir); os.IsNotExist(err) && syscall.Kill(pid, 0) != nil {
			return
		}
	}
	t.Errorf("resumed agent %d still there or its copy %s kept 30 s after its link closed", pid, cp.Dir)
}
