package proc

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// WaitTCP waits until addr accepts a TCP connection from inside n. It gives
// up when ctx ends or when p (optional) exits first, quoting p's exit.
func WaitTCP(ctx context.Context, n *ns.NS, addr string, p *Process) error {
	var last error
	for delay := 2 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		last = n.Do(func() error {
			// The socket is created on this thread, inside n; connecting
			// may then finish on any thread.
			c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
			if err == nil {
				c.Close()
			}
			return err
		})
		if last == nil {
			return nil
		}
		var exited <-chan struct{}
		if p != nil {
			exited = p.Done()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s in %s: %w (last: %v)", addr, n.Name, ctx.Err(), last)
		case <-exited:
			return fmt.Errorf("wait for %s in %s: %s exited: %v", addr, n.Name, p.Name, p.Err())
		case <-time.After(delay):
		}
	}
}
