package profile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sampler starts a recording of the stacks of the processes it watches.
type Sampler interface {
	// Start starts recording, paused: it samples only between Resume
	// and Pause.
	Start(ctx context.Context) (Recording, error)
}

// Recording is a running sampler.
type Recording interface {
	// Resume samples from now on; it returns once sampling is on.
	Resume() error
	// Pause stops sampling until the next Resume.
	Pause() error
	// Stop ends the recording and returns its stacks, folded. It removes
	// every file of the recording, and is safe to call twice.
	Stop(ctx context.Context) (Stacks, error)
}

// Frequency is the sampling rate (Hz): a prime, so the clock does not beat
// with periodic work.
const Frequency = 499

// Method describes how Perf samples, for the results.
const Method = "perf record -e cpu-clock -F 499 -g -a -G <the run's cgroup>: a software clock (no hardware PMU needed), kernel and user frames (frame pointers), every process of the run's roles and only them"

// Perf samples with perf(1): the cpu-clock software event at Frequency
// on every CPU, restricted to one cgroup v2 directory and its children,
// kernel and user call chains by frame pointer (Go binaries keep them and
// perf names their functions from the symbol table). perf is started
// paused and switched by its control FIFOs.
type Perf struct {
	Path   string // perf's binary
	Cgroup string // the cgroup to sample, relative to the cgroup2 mount ("twnsb-3fa9c1")
	Dir    string // a private directory: each recording's files live in a new one inside and are removed
}

// Bounds on perf's steps: its start (it first lists every process's
// mappings), its exit after SIGINT (it writes the file's header), and
// folding a recording.
const (
	startWait  = 20 * time.Second
	stopWait   = 20 * time.Second
	scriptWait = 120 * time.Second
	ackWait    = 10 * time.Second
)

// Start starts perf record, paused, and returns once it answers on its
// control FIFO.
func (p Perf) Start(ctx context.Context) (Recording, error) {
	dir, err := os.MkdirTemp(p.Dir, "perf-")
	if err != nil {
		return nil, fmt.Errorf("perf: work directory: %w", err)
	}
	r := &perfRecording{perf: p.Path, dir: dir}
	ok := false
	defer func() {
		if !ok {
			r.kill()
			_ = os.RemoveAll(dir)
		}
	}()
	ctl, ack := filepath.Join(dir, "ctl"), filepath.Join(dir, "ack")
	for _, f := range []string{ctl, ack} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			return nil, fmt.Errorf("perf: control FIFO: %w", err)
		}
	}
	// Read-write opens do not wait for perf to open the other end.
	if r.ctl, err = os.OpenFile(ctl, os.O_RDWR, 0); err != nil {
		return nil, fmt.Errorf("perf: control FIFO: %w", err)
	}
	if r.ack, err = os.OpenFile(ack, os.O_RDWR, 0); err != nil {
		return nil, fmt.Errorf("perf: control FIFO: %w", err)
	}
	r.acks = bufio.NewReader(r.ack)
	r.data = filepath.Join(dir, "perf.data")
	cmd := exec.Command(p.Path, "record", "-e", "cpu-clock", "-F", strconv.Itoa(Frequency), "-g", "-a",
		"-G", p.Cgroup, "-D", "-1", "--control", "fifo:"+ctl+","+ack,
		"-B", "-N", "-q", "-o", r.data)
	cmd.Stdout, cmd.Stderr = &r.out, &r.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf: start: %w", err)
	}
	r.cmd, r.done = cmd, make(chan struct{})
	go func() { r.err = cmd.Wait(); close(r.done) }()
	// It is already paused: the answer says it is up.
	if err := r.command(ctx, "disable", startWait); err != nil {
		return nil, err
	}
	ok = true
	return r, nil
}

type perfRecording struct {
	perf, dir, data string
	control
	process
	stopped bool
}

// control is perf's control FIFOs: commands in, "ack" out.
type control struct {
	ctl, ack *os.File
	acks     *bufio.Reader
}

// process is the running perf record.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when perf has exited
	err  error         // perf's exit, once done is closed
	out  bytes.Buffer  // perf's own messages
}

func (r *perfRecording) Resume() error { return r.command(context.Background(), "enable", ackWait) }
func (r *perfRecording) Pause() error  { return r.command(context.Background(), "disable", ackWait) }

// command sends one control command and waits, up to wait, for perf's
// "ack".
func (r *perfRecording) command(ctx context.Context, cmd string, wait time.Duration) error {
	select {
	case <-r.done:
		return r.exited()
	default:
	}
	if _, err := r.ctl.WriteString(cmd + "\n"); err != nil {
		return fmt.Errorf("perf: %s: %w", cmd, err)
	}
	got := make(chan error, 1)
	if err := r.ack.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return fmt.Errorf("perf: %s: %w", cmd, err)
	}
	go func() {
		// perf writes "ack\n" and its C string's NUL.
		line, err := r.acks.ReadString('\n')
		if err == nil && strings.Trim(line, "\x00 \n") != "ack" {
			err = fmt.Errorf("answered %q", line)
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			return fmt.Errorf("perf: %s: no acknowledgement (waited up to %v): %w", cmd, wait, err)
		}
		return nil
	case <-r.done:
		return r.exited()
	case <-ctx.Done():
		return fmt.Errorf("perf: %s: %w", cmd, context.Cause(ctx))
	}
}

// exited is perf's exit as an error, with what it said.
func (r *perfRecording) exited() error {
	return fmt.Errorf("perf record exited (%v): %s", r.err, firstLines(r.out.String()))
}

// Stop ends perf with SIGINT (it then completes its file), SIGKILL past
// stopWait, and folds what it recorded.
func (r *perfRecording) Stop(ctx context.Context) (Stacks, error) {
	if r.stopped {
		return Stacks{}, nil
	}
	r.stopped = true
	defer os.RemoveAll(r.dir)
	defer r.ctl.Close()
	defer r.ack.Close()
	_ = r.cmd.Process.Signal(syscall.SIGINT) // our own child, by its PID
	select {
	case <-r.done:
	case <-time.After(stopWait):
		r.kill()
		return nil, fmt.Errorf("perf record did not end within %v of SIGINT: killed", stopWait)
	}
	if st, err := os.Stat(r.data); err != nil || st.Size() == 0 {
		return nil, fmt.Errorf("perf record wrote no data (%v): %s", r.err, firstLines(r.out.String()))
	}
	return script(ctx, r.perf, r.data)
}

// kill ends perf at once (by its PID, its own process group) and reaps it.
func (r *perfRecording) kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	<-r.done
}

// script folds a perf.data file through perf script, bounded in time.
func script(ctx context.Context, perf, data string) (Stacks, error) {
	ctx, cancel := context.WithTimeout(ctx, scriptWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, perf, "script", "-i", data, "-F", "comm,pid,ip,sym,dso")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf script: start: %w", err)
	}
	stacks, perr := ParseScript(out)
	if perr != nil {
		_, _ = io.Copy(io.Discard, out)
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("perf script: %w: %s", err, firstLines(stderr.String()))
	}
	return stacks, perr
}

// firstLines is the start of a program's messages, on one line.
func firstLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 3 {
		lines = lines[:3]
	}
	return strings.Join(lines, " / ")
}

// ErrNoPerf is the refusal of --profile where perf is missing.
var ErrNoPerf = errors.New("--profile needs perf (Debian: apt-get install linux-perf; scripts/install-deps.sh installs it)")

// Find is perf's path, or ErrNoPerf.
func Find() (string, error) {
	p, err := exec.LookPath("perf")
	if err != nil {
		return "", ErrNoPerf
	}
	return p, nil
}
