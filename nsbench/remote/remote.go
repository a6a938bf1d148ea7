// Package remote reaches the hosts of an inventory the way OpenSSH does:
// host keys checked against known_hosts (never skipped), keys from
// ssh-agent, --identity or ~/.ssh/id_*, a bounded dial, keepalives that
// notice a dead link, and root through the login or `sudo -n`. On a host
// it can copy the running binary to a run-unique path, verify it, run it,
// and remove it.
//
// Every error names the host as USER@HOST:PORT and is one line.
package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/textsafe"
)

// Config is how to reach hosts; the zero value is OpenSSH's defaults.
type Config struct {
	Identity   string // private key file; "" uses ssh-agent and ~/.ssh/id_*
	KnownHosts string // "" is ~/.ssh/known_hosts
	// DialTimeout bounds the TCP connect and the SSH handshake, each;
	// 0 is 10 s.
	DialTimeout time.Duration
	// KeepaliveInterval is how often an idle link is probed
	// (keepalive@openssh.com, like ssh's ServerAliveInterval); the link is
	// declared dead and closed when one probe gets no answer within
	// MissedKeepalives intervals. 0 is 5 s. Once an agent runs on the
	// link (StartAgent), its pings are the link's keepalive instead.
	KeepaliveInterval time.Duration
	// Dial opens the TCP connection; nil is a net.Dialer. Tests dial from
	// inside a namespace of their own.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// MissedKeepalives is how many intervals a keepalive may go unanswered.
const MissedKeepalives = 3

func (c Config) dialTimeout() time.Duration {
	if c.DialTimeout > 0 {
		return c.DialTimeout
	}
	return 10 * time.Second
}

func (c Config) keepalive() time.Duration {
	if c.KeepaliveInterval > 0 {
		return c.KeepaliveInterval
	}
	return 5 * time.Second
}

// Conn is one SSH connection to one host, checked to reach root there.
type Conn struct {
	Host   hosts.Host
	client *ssh.Client
	sudo   bool // commands as root need `sudo -n`
	closed chan struct{}
	once   sync.Once
	mu     sync.Mutex
	dead   error // why the keepalive closed the link
	// agent is closed when an agent's wire takes over the link's
	// keepalive (keepAliveBy): one probe on a link, never two.
	agent     chan struct{}
	agentOnce sync.Once
}

// Dial connects to h, checks its host key and logs in, starts keepalives,
// and checks that the login reaches root (it is root, or `sudo -n` works).
// Every failure is a refusal naming h.
func Dial(ctx context.Context, cfg Config, h hosts.Host) (*Conn, error) {
	auth, err := loadAuth(cfg.Identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.Dest(), err)
	}
	defer auth.close()
	hk, err := newHostKeys(cfg.KnownHosts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.Dest(), err)
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	timeout := cfg.dialTimeout()
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tcp, err := dial(dctx, "tcp", h.HostPort())
	if err != nil {
		if dctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("%s: unreachable: no TCP connection within %s: %w", h.Dest(), timeout, err)
		}
		return nil, fmt.Errorf("%s: unreachable: %w", h.Dest(), err)
	}
	// The handshake gets its own bound: a port that accepts and then
	// says nothing (a firewall, a wedged sshd) must not hang the run.
	tcp.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { tcp.Close() })
	sc, chans, reqs, err := ssh.NewClientConn(tcp, h.HostPort(), &ssh.ClientConfig{
		User:              h.User,
		Auth:              auth.methods,
		HostKeyCallback:   hk.callback,
		HostKeyAlgorithms: hk.algorithms(h.HostPort()),
	})
	stop()
	if err != nil {
		tcp.Close()
		var hke *HostKeyError
		if errors.As(err, &hke) {
			return nil, fmt.Errorf("%s: %w", h.Dest(), hke)
		}
		if strings.Contains(err.Error(), "unable to authenticate") {
			return nil, fmt.Errorf("%s: log in: %w (tried %s; is its public key in ~%s/.ssh/authorized_keys there?)", h.Dest(), err, auth.tried(), h.User)
		}
		return nil, fmt.Errorf("%s: ssh handshake: %w", h.Dest(), err)
	}
	tcp.SetDeadline(time.Time{})
	c := &Conn{Host: h, client: ssh.NewClient(sc, chans, reqs), closed: make(chan struct{}), agent: make(chan struct{})}
	go c.keepalive(cfg.keepalive())
	if err := c.checkRoot(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// keepalive probes the link every interval until an agent's wire takes
// over (keepAliveBy); an answer missing for MissedKeepalives intervals
// closes the connection, so every session on it fails instead of waiting
// on a dead link.
func (c *Conn) keepalive(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-c.agent:
			return
		case <-t.C:
		}
		reply := make(chan error, 1)
		go func() {
			_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		bound := MissedKeepalives * interval
		select {
		case <-c.closed:
			return
		case <-c.agent:
			return
		case err := <-reply:
			if err != nil {
				c.die(fmt.Errorf("link lost: %w", err))
				return
			}
		case <-time.After(bound):
			c.die(fmt.Errorf("link dead: no keepalive answer within %s", bound))
			return
		}
	}
}

// keepAliveBy hands the link's keepalive to the pings of w, the wire to
// an agent on the host: they cross the link and the agent answers them,
// so they notice a frozen agent, which keepalive@openssh.com (answered by
// sshd) does not, as well as a cut link. When w ends for want of an
// answer, the link is closed as the SSH probe would close it: every
// session on it fails at once, and Dead says why.
func (c *Conn) keepAliveBy(w *role.Wire) {
	c.agentOnce.Do(func() { close(c.agent) })
	go func() {
		select {
		case <-c.closed:
		case <-w.Done():
			var lost *role.LostError
			if errors.As(w.Err(), &lost) && lost.Silent {
				c.die(lost)
			}
		}
	}()
}

func (c *Conn) die(err error) {
	c.mu.Lock()
	if c.dead == nil {
		c.dead = err
	}
	c.mu.Unlock()
	c.client.Close()
}

// LocalAddr is this machine's address on the connection: where the host
// is reached from.
func (c *Conn) LocalAddr() netip.Addr {
	if a, ok := c.client.LocalAddr().(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return ip.Unmap()
		}
	}
	return netip.Addr{}
}

// Dead is why the keepalives closed the link, or nil.
func (c *Conn) Dead() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

// Wait returns when the connection has ended, for whatever reason.
func (c *Conn) Wait() error { return c.client.Wait() }

// Close ends the connection. Safe to call twice.
func (c *Conn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.client.Close()
}

// checkRoot: the login is root, or `sudo -n` makes it root without asking.
func (c *Conn) checkRoot(ctx context.Context) error {
	if c.Host.User != "root" {
		c.sudo = true
	}
	out, err := c.Output(ctx, c.AsRoot("id -u"), nil)
	if err == nil && strings.TrimSpace(string(out)) == "0" {
		return nil
	}
	if !c.sudo {
		return fmt.Errorf("%s: the login is not root (id -u: %s)", c.Host.Dest(), strings.TrimSpace(string(out)))
	}
	var ee *ssh.ExitError
	if errors.As(err, &ee) && ee.ExitStatus() == 127 {
		return fmt.Errorf("%s: not root and sudo is not installed; log in as root, or install sudo with a NOPASSWD rule (see docs/hosts.md)", c.Host.Dest())
	}
	return fmt.Errorf("%s: sudo needs a password; add a NOPASSWD rule (see docs/hosts.md) (%s)", c.Host.Dest(),
		strings.TrimPrefix(fmt.Sprint(err), c.Host.Dest()+": "))
}

// AsRoot returns cmd prefixed to run as root: `sudo -n` unless the login
// is root (never prompting: a missing rule fails at once).
func (c *Conn) AsRoot(cmd string) string {
	if c.sudo {
		return "sudo -n " + cmd
	}
	return cmd
}

// Output runs cmd (a shell command line) in a new session with stdin and
// returns its stdout. A failure quotes the last line of its stderr; ctx
// ending kills the session.
func (c *Conn) Output(ctx context.Context, cmd string, stdin io.Reader) ([]byte, error) {
	s, err := c.client.NewSession()
	if err != nil {
		return nil, c.linkErr(fmt.Errorf("%s: open session: %w", c.Host.Dest(), err))
	}
	defer s.Close()
	var stdout, stderr bytes.Buffer
	s.Stdin, s.Stdout, s.Stderr = stdin, &stdout, &stderr
	done := make(chan error, 1)
	go func() { done <- s.Run(cmd) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		s.Signal(ssh.SIGKILL)
		s.Close()
		return stdout.Bytes(), fmt.Errorf("%s: %s: %w", c.Host.Dest(), cmd, ctx.Err())
	}
	if err != nil {
		if line := lastLine(stderr.String()); line != "" {
			err = fmt.Errorf("%w: %s", err, line)
		}
		return stdout.Bytes(), c.linkErr(fmt.Errorf("%s: %s: %w", c.Host.Dest(), cmd, err))
	}
	return stdout.Bytes(), nil
}

// linkErr adds why the keepalives closed the link, when they did.
func (c *Conn) linkErr(err error) error {
	if dead := c.Dead(); dead != nil {
		return fmt.Errorf("%w (%v)", err, dead)
	}
	return err
}

// lastLine is the last line of a host's output, quoted for printing
// (textsafe.Quote): the host wrote it.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return textsafe.Quote(strings.TrimSpace(lines[len(lines)-1]))
}

// quote makes s one word for a POSIX shell.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
