// Package manyrr is the many-connections request/response test: a server
// that answers each fixed-size request with a response of the same size,
// on every connection it accepts, and a client that opens N connections at
// once and runs each closed-loop (one request in flight per connection,
// the next sent when the response is in: a pgbench-shaped client) for a
// duration, then prints its Report as JSON. Both are hidden subcommands of
// the twnsbench binary, run in the server and client roles.
package manyrr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
)

const (
	// ServerArg and ClientArg are the hidden subcommands.
	ServerArg = "many-rr-server"
	ClientArg = "many-rr-client"
	// Size is the request's and the response's size in bytes.
	Size = 64
	// DialTimeout bounds each connection's set-up.
	DialTimeout = 10 * time.Second
)

// MaybeRun runs the server or the client and exits when this process was
// started as one (os.Args[1] is ServerArg or ClientArg); otherwise it
// returns at once. Test binaries call it first thing in TestMain; the
// twnsbench binary has hidden subcommands instead.
func MaybeRun() {
	proc.MaybeRunHidden(ServerArg, ServerMain)
	proc.MaybeRunHidden(ClientArg, ClientMain)
}

// ServerMain is the server's command line: --listen HOST:PORT. It answers
// until ctx ends.
var ServerMain = proc.ListenMain(ServerArg, "", Serve)

// Serve answers on l until ctx ends, then closes l.
func Serve(ctx context.Context, l net.Listener) error {
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		go answer(ctx, c)
	}
}

// answer echoes each Size-byte request on c until the client closes it or
// ctx ends.
func answer(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	buf := make([]byte, Size)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}
