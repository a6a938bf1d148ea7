package role_test

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// agentPair joins a Wire to an Agent through pipes, as an SSH session's
// stdin and stdout join them; closing the returned writer is the session
// ending. agentDone receives what Agent returned.
func agentPair(t *testing.T) (c *role.Wire, hangUp func(), agentDone <-chan error) {
	toAgent, fromOrch := io.Pipe()
	toOrch, fromAgent := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- role.Agent(context.Background(), toAgent, fromAgent, role.AgentConfig{})
		fromAgent.Close()
	}()
	c = role.NewWire("test host", toOrch, fromOrch)
	hangUp = func() { fromOrch.Close() }
	t.Cleanup(hangUp)
	return c, hangUp, done
}

// Every kind of work on a role crosses the wire: processes, ops, files and
// counters give over the wire what they give here.
func TestRoleOverTheWire(t *testing.T) {
	_, _, roles := nstest.Roles(t, t.TempDir())
	c, hangUp, agentDone := agentPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server := role.Via(c, roles[topology.Server])
	client := role.Via(c, roles[topology.Client])

	res, err := client.Run(ctx, "getent", "hosts", "relay.tw.test")
	if err != nil || !strings.HasPrefix(string(res.Stdout), roles[topology.Relay].Addr().String()) {
		t.Errorf("getent over the wire: %q, %v", res.Stdout, err)
	}
	if res.Wall <= 0 {
		t.Errorf("wall time %v", res.Wall)
	}
	// A failing program's output and error both come back.
	res, err = client.Run(ctx, "sh", "-c", "echo oops >&2; exit 3")
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || string(res.Stderr) != "oops\n" {
		t.Errorf("failing program: %q, %v", res.Stderr, err)
	}

	inner := netip.MustParseAddr("10.254.254.2")
	if err := role.AddLoopback(ctx, server, inner); err != nil {
		t.Fatal(err)
	}
	out, err := roles[topology.Server].Run(ctx, "ip", "-o", "addr", "show", "dev", "lo")
	if err != nil || !strings.Contains(string(out.Stdout), inner.String()+"/32") {
		t.Errorf("address added over the wire not on the server's lo: %q, %v", out.Stdout, err)
	}
	if _, err := role.UDPStats(ctx, server); err != nil {
		t.Error(err)
	}
	if _, err := role.RxBytes(ctx, client); err != nil {
		t.Error(err)
	}
	// A file the role lacks is os.ErrNotExist over the wire too (a sysctl
	// older kernels show only in the initial namespace), one it has is read.
	if b, err := role.ReadFile(ctx, client, "/proc/sys/net/core/no-such-sysctl"); !errors.Is(err, os.ErrNotExist) || b != nil {
		t.Errorf("missing file over the wire: %q, %v; want os.ErrNotExist", b, err)
	}
	if b, err := role.ReadFile(ctx, client, "/proc/sys/net/ipv4/ip_forward"); err != nil || len(b) == 0 {
		t.Errorf("ip_forward over the wire: %q, %v", b, err)
	}
	if _, err := role.LinkBytes(ctx, client, "no-such-link"); err == nil || !strings.Contains(err.Error(), "client: role.link-bytes") && !strings.Contains(err.Error(), "no-such-link") {
		t.Errorf("missing link: %v", err)
	}

	// A daemon: its PID is real, Stop ends it and Done closes.
	p, err := server.Start(ctx, server.Program("sleep", "sleep", "30"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(p.PID(), 0); err != nil {
		t.Fatalf("daemon pid %d: %v", p.PID(), err)
	}
	if err := p.Stop(time.Second); err != nil {
		t.Error(err)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done not closed after Stop returned")
	}

	// A cancelled run ends on the far side too.
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	t0 := time.Now()
	_, err = client.Run(short, "sleep", "20")
	cancelShort()
	if err == nil || time.Since(t0) > 5*time.Second {
		t.Errorf("cancelled run: %v after %v", err, time.Since(t0))
	}

	// The session ends: the agent stops what it started, the daemon's
	// Done closes with the reason, later work fails saying so.
	q, err := server.Start(ctx, server.Program("sleep", "sleep", "30"))
	if err != nil {
		t.Fatal(err)
	}
	hangUp()
	select {
	case err := <-agentDone:
		if err != nil {
			t.Errorf("agent: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agent still serving 10 s after its session ended")
	}
	if err := syscall.Kill(q.PID(), 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("daemon %d still there after the session ended: %v", q.PID(), err)
	}
	select {
	case <-q.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("daemon's Done not closed after the session ended")
	}
	if _, err := role.UDPStats(ctx, server); err == nil || !strings.Contains(err.Error(), "connection lost") {
		t.Errorf("work after the session ended: %v", err)
	}
}

// overLine is one JSON object a byte over the wire's line bound.
func overLine(head string) []byte {
	pad := role.MaxLine + 1 - len(head) - len(`,"pad":""}`) + 1
	return []byte(head + `,"pad":"` + strings.Repeat("x", pad) + `"}` + "\n")
}

// Every line the wire reads is bounded, either way: a host's answer or an
// orchestrator's request longer than role.MaxLine ends the connection,
// saying so, instead of being read whole into memory.
func TestWireBoundsEveryLine(t *testing.T) {
	// The orchestrator's end, reading a compromised host's answer.
	toOrch, fromHost := io.Pipe()
	toHost, fromOrch := io.Pipe()
	t.Cleanup(func() { fromHost.Close(); fromOrch.Close() })
	go func() {
		buf := make([]byte, 4096)
		if _, err := toHost.Read(buf); err != nil { // the request
			return
		}
		_, _ = fromHost.Write(overLine(`{"id":1,"result":{"User":1}`))
	}()
	c := role.NewWire("big host", toOrch, fromOrch)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := role.HostNoise(ctx, c, "twnsb-abc123"); err == nil || !strings.Contains(err.Error(), "longer than 64 MiB") {
		t.Errorf("an answer over the bound: %v, want the connection ended naming the bound", err)
	}

	// The agent's end, reading a request.
	in, out := io.Pipe()
	var answers strings.Builder
	done := make(chan error, 1)
	go func() { done <- role.Agent(context.Background(), in, &answers, role.AgentConfig{}) }()
	go func() {
		_, _ = out.Write(overLine(`{"id":7,"kind":"ping"`))
		_, _ = out.Write([]byte(`{"id":8,"kind":"ping"}` + "\n"))
		out.Close()
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "longer than 64 MiB") {
			t.Errorf("agent after a request over the bound: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent still serving 30 s after a request over the bound")
	}
	if answers.Len() != 0 {
		t.Errorf("the agent answered past a request over the bound: %.200s", answers.String())
	}
}
