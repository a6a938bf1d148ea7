package nsbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// The held connection of TestQuietWaitsForSendQueues: opened by ops in the
// roles' namespaces, kept between them.
var held struct {
	sync.Mutex
	ln     net.Listener
	server net.Conn
	client net.Conn
}

var (
	holdListenOp = role.NewOp("test.hold-listen", func(_ context.Context, addr string) (string, error) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return "", err
		}
		held.Lock()
		held.ln = ln
		held.Unlock()
		go func() {
			c, err := ln.Accept()
			if err == nil {
				held.Lock()
				held.server = c // accepted, never read until drain
				held.Unlock()
			}
		}()
		return ln.Addr().String(), nil
	})
	holdDialOp = role.NewOp("test.hold-dial", func(_ context.Context, addr string) (role.Nothing, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return role.Nothing{}, err
		}
		held.Lock()
		held.client = c
		held.Unlock()
		// Write until the peer's window is shut and the socket's buffer
		// full: the bytes are queued when the op returns (a goroutine's
		// write might not have begun when the wait first looks).
		c.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := c.Write(make([]byte, 8<<20))
		if !errors.Is(err, os.ErrDeadlineExceeded) || n == 0 {
			return role.Nothing{}, fmt.Errorf("filling the connection: wrote %d bytes, %v; want a write cut by its deadline", n, err)
		}
		return role.Nothing{}, nil
	})
)

// A connection whose receiver does not read keeps its sender's queue
// full: the wait reports the bytes and the role at its bound; once the
// receiver reads, the queue drains and the wait ends with how long it took.
func TestQuietWaitsForSendQueues(t *testing.T) {
	_, _, roles := nstest.Roles(t, t.TempDir())
	ctx := context.Background()
	if q, where, err := sendQueued(ctx, roles); err != nil || q != 0 {
		t.Fatalf("fresh roles: %d bytes queued (%s), %v; want 0", q, where, err)
	}
	addr, err := holdListenOp.On(ctx, roles[topology.Server], roles[topology.Server].Addr().String()+":0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holdDialOp.On(ctx, roles[topology.Client], addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		held.Lock()
		defer held.Unlock()
		for _, c := range []io.Closer{held.ln, held.server, held.client} {
			if c != nil {
				c.Close()
			}
		}
	})
	drained := func() (bool, string, error) {
		q, where, err := sendQueued(ctx, roles)
		return q == 0, where, err
	}
	// Queued: the bound ends the wait and names the client.
	waited, err := pollUntil(ctx, 500*time.Millisecond, drained)
	if err == nil || !strings.Contains(err.Error(), topology.Client) || waited < 500*time.Millisecond {
		t.Fatalf("an unread connection: waited %s, %v; want the bound (500ms) and the client named", waited, err)
	}
	// The receiver reads everything: the queue drains within the bound.
	held.Lock()
	server := held.server
	held.Unlock()
	if server == nil {
		t.Fatal("the server never accepted")
	}
	go io.Copy(io.Discard, server)
	waited, err = pollUntil(ctx, 30*time.Second, drained)
	if q, where, qerr := sendQueued(ctx, roles); err != nil || qerr != nil || q != 0 {
		t.Fatalf("after the receiver read: waited %s, %v; now %d bytes queued (%s), %v; want drained", waited, err, q, where, qerr)
	}
}
