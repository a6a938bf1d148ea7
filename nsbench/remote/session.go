package remote

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/role"
)

// AgentSession is `twnsbench agent SCOPE` running as root on a host, in
// the foreground of its own SSH session: the session's stdin and stdout
// are the role.Wire's stream, its stderr the copy's own messages.
type AgentSession struct {
	Wire   *role.Wire
	stdin  io.WriteCloser
	done   chan error
	stderr *lastLines
}

// StartAgent starts the copy as the agent of scope on c's host. When the
// session ends for any reason (Close, this process killed, the link cut)
// the agent stops what it started and removes what it built. From then on
// the agent's pings keep the link alive (keepAliveBy).
func (c *Conn) StartAgent(cp *Copy, scope string) (*AgentSession, error) {
	a, err := startAgent(c.Host.Role+" "+c.Host.Dest(), func(stderr io.Writer) (io.WriteCloser, io.Reader, func() error, error) {
		s, err := c.client.NewSession()
		if err != nil {
			return nil, nil, nil, c.linkErr(fmt.Errorf("%s: open session: %w", c.Host.Dest(), err))
		}
		stdin, err := s.StdinPipe()
		if err != nil {
			s.Close()
			return nil, nil, nil, fmt.Errorf("%s: agent: %w", c.Host.Dest(), err)
		}
		stdout, err := s.StdoutPipe()
		if err != nil {
			s.Close()
			return nil, nil, nil, fmt.Errorf("%s: agent: %w", c.Host.Dest(), err)
		}
		s.Stderr = stderr
		if err := s.Start(cp.Command("agent", scope)); err != nil {
			s.Close()
			return nil, nil, nil, c.linkErr(fmt.Errorf("%s: start the agent: %w", c.Host.Dest(), err))
		}
		return stdin, stdout, func() error {
			err := s.Wait()
			s.Close()
			return err
		}, nil
	})
	if err != nil {
		return nil, err
	}
	c.keepAliveBy(a.Wire)
	return a, nil
}

// StartLocalAgent starts this binary as the agent of scope on this
// machine, for a role here beside roles on other hosts: the same agent as
// on another host, its stream a pipe instead of an SSH session. When this
// process ends for any reason, the pipe closes and the agent removes what
// it built.
func StartLocalAgent(name, scope string) (*AgentSession, error) {
	return startAgent(name, func(stderr io.Writer) (io.WriteCloser, io.Reader, func() error, error) {
		self, err := os.Executable()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: agent: %w", name, err)
		}
		cmd := exec.Command(self, "agent", scope)
		// Its own process group: a Ctrl-C at the terminal reaches the
		// orchestrator, which then tears the role down through it in order.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: agent: %w", name, err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: agent: %w", name, err)
		}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: start the agent: %w", name, err)
		}
		return stdin, stdout, cmd.Wait, nil
	})
}

// openStream starts an agent with its messages to stderr and returns its
// stream (the agent's stdin and stdout) and what waits for its end.
type openStream func(stderr io.Writer) (stdin io.WriteCloser, stdout io.Reader, wait func() error, err error)

// startAgent is an agent started by open, the Wire to it named name, kept
// alive by its pings (role.Wire.KeepAlive).
func startAgent(name string, open openStream) (*AgentSession, error) {
	a := &AgentSession{done: make(chan error, 1), stderr: &lastLines{}}
	stdin, stdout, wait, err := open(a.stderr)
	if err != nil {
		return nil, err
	}
	a.stdin = stdin
	go func() {
		a.done <- wait()
		close(a.done)
	}()
	a.Wire = role.NewWire(name, stdout, stdin)
	a.Wire.KeepAlive()
	return a, nil
}

// AgentExit bounds how long Close waits for the agent to clean up and
// exit after its stdin closed.
const AgentExit = 30 * time.Second

// Close ends the session's stream and waits, within AgentExit, for the
// agent to have stopped its daemons, removed what it built and exited.
func (a *AgentSession) Close() error {
	a.stdin.Close()
	select {
	case err, ok := <-a.done:
		if ok && err != nil {
			return fmt.Errorf("agent: %w (%s)", err, a.stderr.last())
		}
		return nil
	case <-time.After(AgentExit):
		return fmt.Errorf("agent: still running %v after its stream closed (%s)", AgentExit, a.stderr.last())
	}
}

// lastLines keeps the end of a stream, for an error message.
type lastLines struct {
	mu sync.Mutex
	b  []byte
}

func (l *lastLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	if len(l.b) > 4096 {
		l.b = l.b[len(l.b)-4096:]
	}
	return len(p), nil
}

func (l *lastLines) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return lastLine(string(l.b))
}
