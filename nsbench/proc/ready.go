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
	return WaitUntil(ctx, fmt.Sprintf("%s in %s", addr, n.Name), func() error {
		return n.Do(func() error { return DialTCP(addr) })
	}, p)
}

// DialTCP connects to addr and closes the connection at once: whether
// something accepts there, from the calling thread's namespace. The socket
// is created on this thread; connecting may then finish on any thread.
func DialTCP(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err
}

// WaitUntil calls try, backing off from 2 ms to 100 ms, until it succeeds.
// It gives up when ctx ends or when p (optional) exits first, quoting p's
// exit; what names the awaited thing in the error.
func WaitUntil(ctx context.Context, what string, try func() error, p *Process) error {
	for delay := 2 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		last := try()
		if last == nil {
			return nil
		}
		var exited <-chan struct{}
		if p != nil {
			exited = p.Done()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %v)", what, ctx.Err(), last)
		case <-exited:
			return fmt.Errorf("wait for %s: %s exited: %v", what, p.Name, p.Err())
		case <-time.After(delay):
		}
	}
}
