// Package proc starts programs inside a role's network namespace and cgroup,
// as the harness's direct children, logs their output, waits for readiness
// by condition, and stops them by PID.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// Program describes one program to run.
type Program struct {
	Name   string     // "server/sshd": for logs and errors
	NetNS  string     // path of the network namespace to run in
	Cgroup *Cgroup    // the role's cgroup; nil keeps the harness's own
	Argv   []string   // Argv[0] is resolved on PATH when not absolute
	Env    []string   // added to the kept part of the harness's environment (Environ)
	Dir    string     // working directory
	Mounts []ns.Mount // private mount namespace changes (hosts file, ...)
	Log    string     // file that receives stdout and stderr of a daemon
	// HostMounts keeps the host's mount namespace (no Mounts then): what
	// the program mounts, such as a named network namespace, is the host's.
	HostMounts bool
	// CPUs are the only CPUs it and everything it starts may run on (set
	// by the launcher before exec); nil: the harness's own affinity.
	CPUs []int
}

// Process is a running daemon.
type Process struct {
	Name string
	pid  int
	// stop, when set, stops a process started elsewhere (Attach): on a
	// role's host, by the twnsbench copy there.
	stop func(grace time.Duration) error
	done chan struct{}
	err  error // valid after done is closed
	log  *os.File
}

// Attach is a daemon that runs elsewhere (on a role's host, started by
// the twnsbench copy there): stop stops it there, and exited, called once
// when it has ended, closes Done with its status.
func Attach(name string, pid int, stop func(grace time.Duration) error) (p *Process, exited func(error)) {
	p = &Process{Name: name, pid: pid, stop: stop, done: make(chan struct{})}
	var once sync.Once
	return p, func(err error) {
		once.Do(func() {
			p.err = err
			close(p.done)
		})
	}
}

// Start launches a daemon. Its output goes to spec.Log.
func Start(spec Program) (*Process, error) {
	cmd, release, err := command(spec)
	if err != nil {
		return nil, err
	}
	defer release()
	var log *os.File
	if spec.Log != "" {
		log, err = os.OpenFile(spec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%s: open log: %w", spec.Name, err)
		}
		cmd.Stdout, cmd.Stderr = log, log
	}
	if err := cmd.Start(); err != nil {
		if log != nil {
			log.Close()
		}
		return nil, fmt.Errorf("%s: start: %w", spec.Name, err)
	}
	p := &Process{Name: spec.Name, pid: cmd.Process.Pid, done: make(chan struct{}), log: log}
	go func() {
		p.err = cmd.Wait()
		if p.log != nil {
			p.log.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// PID is the daemon's process ID (the real program's, not a wrapper's).
// For an attached process it is the PID on the role's host.
func (p *Process) PID() int { return p.pid }

// Done is closed when the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit status; valid once Done is closed.
func (p *Process) Err() error { return p.err }

// Stop sends SIGTERM, waits up to grace for the exit, then SIGKILL. Safe to
// call on an exited process and to call twice.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if p.stop != nil {
		return p.stop(grace)
	}
	if err := signalGroup(p.PID(), syscall.SIGTERM); err != nil {
		return fmt.Errorf("%s: stop process group %d: %w", p.Name, p.PID(), err)
	}
	// As systemd does: a stopped (SIGSTOP) process acts on SIGTERM only
	// once continued.
	_ = signalGroup(p.PID(), syscall.SIGCONT)
	select {
	case <-p.done:
		// The leader is gone; anything it forked into its group goes too.
		_ = signalGroup(p.PID(), syscall.SIGKILL)
		return nil
	case <-time.After(grace):
	}
	// A wedged daemon never acts on SIGTERM.
	if err := signalGroup(p.PID(), syscall.SIGKILL); err != nil {
		return fmt.Errorf("%s: kill process group %d: %w", p.Name, p.PID(), err)
	}
	<-p.done
	return nil
}

// signalGroup signals the process group that pgid leads: every process the
// harness starts leads its own group (Setpgid), so this reaches the program
// and whatever it forked without touching anything else. A group that is
// already gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return fmt.Errorf("refusing to signal process group %d", pgid)
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// KillGroup kills the process group that pid leads (a program started with
// Setpgid, by the harness): the program and everything it forked.
func KillGroup(pid int) error { return signalGroup(pid, syscall.SIGKILL) }

// WaitDelay bounds how long a finished or killed client program's output
// is drained: a grandchild that left the group and kept the pipes open
// must not hold the harness.
const WaitDelay = 2 * time.Second

// Result is a finished client program.
type Result struct {
	Stdout, Stderr []byte
	Wall           time.Duration // from start to exit, launcher included (~ms)
	// StderrLines are stderr's complete lines, each with the time it
	// arrived, measured from the start as Wall is: when a tool's own
	// progress lines mark a point inside its run (ssh -v's "Sending
	// command"), the instrument times the part after it.
	StderrLines []Line
}

// Line is one line of a program's output and when the harness read it.
type Line struct {
	At   time.Duration // since the program's start
	Text string        // without its line end ("\n", "\r\n")
}

// lineStamps records the lines written to it with their arrival time. The
// exec package's copying goroutine writes; Run reads once Wait returned.
type lineStamps struct {
	start   time.Time
	mu      sync.Mutex
	partial []byte
	lines   []Line
}

func (w *lineStamps) Write(p []byte) (int, error) {
	at := time.Since(w.start)
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			return n, nil
		}
		line := strings.TrimSuffix(string(append(w.partial, p[:i]...)), "\r")
		w.lines = append(w.lines, Line{At: at, Text: line})
		w.partial, p = w.partial[:0], p[i+1:]
	}
}

func (w *lineStamps) done() []Line {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lines
}

// Run runs a client program to completion and captures its output. A
// cancelled ctx kills it. A non-zero exit is returned as an *exec.ExitError
// together with the output, so callers can quote the tool's own message.
func Run(ctx context.Context, spec Program) (Result, error) {
	cmd, release, err := command(spec)
	if err != nil {
		return Result{}, err
	}
	defer release()
	var stdout, stderrBuf bytes.Buffer
	stamps := &lineStamps{}
	stderr := io.MultiWriter(&stderrBuf, stamps)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if spec.Log != "" {
		log, err := os.OpenFile(spec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return Result{}, fmt.Errorf("%s: open log: %w", spec.Name, err)
		}
		defer log.Close()
		fmt.Fprintf(log, "$ %q\n", spec.Argv)
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&stdout, log), io.MultiWriter(stderr, log)
	}
	start := time.Now()
	stamps.start = start
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("%s: start: %w", spec.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// Our own child's group, by its PID: the tool and its children.
		_ = signalGroup(cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = fmt.Errorf("%s: %w", spec.Name, context.Cause(ctx))
	}
	wall := time.Since(start)
	return Result{Stdout: stdout.Bytes(), Stderr: stderrBuf.Bytes(), Wall: wall, StderrLines: stamps.done()}, err
}

// systemDirs hold daemons (sshd, openvpn) that a root shell's or sudo's
// PATH may lack.
var systemDirs = []string{"/usr/local/sbin", "/usr/sbin", "/sbin"}

// LookPath finds a program on this host: a path as given, a name on PATH
// or else in the system directories. A program runs where its role is, so
// a bare name is looked up by the host that runs it, never the
// orchestrator.
func LookPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err == nil || strings.Contains(name, "/") {
		return p, err
	}
	for _, dir := range systemDirs {
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", err
}

// command builds the launcher command for spec. release closes what only
// Start needs; call it once Start has returned.
func command(spec Program) (cmd *exec.Cmd, release func(), err error) {
	if len(spec.Argv) == 0 {
		return nil, nil, fmt.Errorf("%s: empty command", spec.Name)
	}
	argv := append([]string(nil), spec.Argv...)
	path, err := LookPath(argv[0])
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	if argv[0], err = filepath.Abs(path); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	helperArgv, planEnv, err := ns.HelperCommand(ns.Plan{NetNS: spec.NetNS, Mounts: spec.Mounts, Argv: argv, HostMounts: spec.HostMounts, CPUs: spec.CPUs})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	cmd = exec.Command(helperArgv[0], helperArgv[1:]...)
	cmd.Env = Environ(append(slices.Clip(spec.Env), planEnv)...)
	cmd.Dir = spec.Dir
	cmd.WaitDelay = WaitDelay
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true, // a terminal's Ctrl-C reaches the harness only; it stops children itself
		// If the harness dies without teardown, its children die with it;
		// `twnsbench clean` removes what they forked.
		Pdeathsig: syscall.SIGKILL,
	}
	release = func() {}
	if spec.Cgroup != nil {
		fd, err := syscall.Open(spec.Cgroup.Path, syscall.O_DIRECTORY|syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: open cgroup: %w", spec.Name, err)
		}
		// clone3(CLONE_INTO_CGROUP): the child is born in the role's cgroup.
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = fd
		release = func() { syscall.Close(fd) }
	}
	return cmd, release, nil
}
