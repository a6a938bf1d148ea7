package role

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// agentStopGrace is how long the agent gives each daemon it started to
// exit on SIGTERM when its connection ends, before SIGKILL.
const agentStopGrace = 2 * time.Second

// AgentConfig is how an agent ends.
type AgentConfig struct {
	// Idle ends the agent when no request (the orchestrator pings every
	// PingInterval) came for this long: a cut link that the SSH server
	// does not notice. 0: only the end of the stream ends it.
	Idle time.Duration
	// Cleanup removes what the copy built for the run, after its daemons
	// have been stopped.
	Cleanup func(context.Context) error
	// Bounds are what its requests may reach; nil: anything (a test's
	// agent serving roles it built itself).
	Bounds *Bounds
}

// Agent is the far end of a Wire: the twnsbench copy on a role's host,
// serving requests read from r and answering on w. When r ends (the
// orchestrator closed the session, or died and the SSH server hung up) or
// nothing came for cfg.Idle (the link was cut), it stops every daemon it
// started, runs cfg.Cleanup and returns.
func Agent(ctx context.Context, r io.Reader, w io.Writer, cfg AgentConfig) error {
	a := &agent{enc: json.NewEncoder(w), daemons: map[uint64]*agentDaemon{}, cancels: map[uint64]context.CancelFunc{}}
	ctx, cancelAll := context.WithCancel(withBounds(ctx, cfg.Bounds))
	lines := make(chan []byte)
	readDone := make(chan error, 1)
	go func() {
		sc := lineScanner(r)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		err := sc.Err()
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("agent: a request longer than %d MiB: %w", MaxLine>>20, err)
		}
		readDone <- err
	}()
	var idle <-chan time.Time
	var idleTimer *time.Timer
	if cfg.Idle > 0 {
		idleTimer = time.NewTimer(cfg.Idle)
		idle = idleTimer.C
	}
	var inflight sync.WaitGroup
	var endErr error
serving:
	for {
		var line []byte
		select {
		case line = <-lines:
		case endErr = <-readDone:
			break serving
		case <-idle:
			endErr = fmt.Errorf("agent: no request for %v: the orchestrator is gone", cfg.Idle)
			break serving
		case <-ctx.Done():
			endErr = ctx.Err()
			break serving
		}
		if idleTimer != nil {
			idleTimer.Reset(cfg.Idle)
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			endErr = fmt.Errorf("agent: bad request: %w", err)
			break
		}
		switch req.Kind {
		case "cancel":
			a.cancel(req.Cancel)
			continue
		case "ping":
			a.send(response{ID: req.ID})
			continue
		}
		rctx, cancel := context.WithCancel(ctx)
		a.mu.Lock()
		a.cancels[req.ID] = cancel
		a.mu.Unlock()
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			resp := a.serve(rctx, req)
			resp.ID = req.ID
			a.mu.Lock()
			delete(a.cancels, req.ID)
			a.mu.Unlock()
			cancel()
			a.send(resp)
		}()
	}
	cancelAll()
	inflight.Wait()
	a.stopAll()
	var cerr error
	if cfg.Cleanup != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cerr = cfg.Cleanup(cctx)
		cancel()
	}
	if endErr != nil && !errors.Is(endErr, context.Canceled) {
		return errors.Join(endErr, cerr)
	}
	return cerr
}

type agent struct {
	wmu sync.Mutex
	enc *json.Encoder

	mu      sync.Mutex
	daemons map[uint64]*agentDaemon
	cancels map[uint64]context.CancelFunc
}

// agentDaemon is a daemon the agent started; reported is closed once its
// exit event has been sent.
type agentDaemon struct {
	p        *proc.Process
	reported chan struct{}
}

func (a *agent) send(resp response) {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	_ = a.enc.Encode(resp) // a lost orchestrator: r ends and Agent cleans up
}

func (a *agent) cancel(id uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.cancels[id]; ok {
		c()
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (a *agent) serve(ctx context.Context, req request) response {
	switch req.Kind {
	case "call":
		if req.NetNS == "" {
			if err := boundsOf(ctx).hostOp(req.Op); err != nil {
				return response{Err: err.Error()}
			}
			out, err := serve(ctx, req.Op, true, req.Args)
			return response{Result: out, Err: errText(err)}
		}
		if err := boundsOf(ctx).netns(req.NetNS); err != nil {
			return response{Err: err.Error()}
		}
		n, err := ns.Open(req.NetNS)
		if err != nil {
			return response{Err: err.Error()}
		}
		defer n.Close()
		out, err := nsHost{n}.call(ctx, req.Op, req.Args)
		return response{Result: out, Err: errText(err)}
	case "run":
		if req.Program == nil {
			return response{Err: "run: no program"}
		}
		if err := boundsOf(ctx).program(*req.Program); err != nil {
			return response{Err: "run: " + err.Error()}
		}
		res, err := proc.Run(ctx, *req.Program)
		return response{Run: &res, Err: errText(err)}
	case "start":
		if req.Program == nil {
			return response{Err: "start: no program"}
		}
		if err := boundsOf(ctx).program(*req.Program); err != nil {
			return response{Err: "start: " + err.Error()}
		}
		p, err := proc.Start(*req.Program)
		if err != nil {
			return response{Err: err.Error()}
		}
		d := &agentDaemon{p: p, reported: make(chan struct{})}
		a.mu.Lock()
		a.daemons[req.Handle] = d
		a.mu.Unlock()
		go func() {
			<-p.Done()
			a.send(response{Handle: req.Handle, Exited: true, Err: errText(p.Err())})
			close(d.reported)
		}()
		return response{PID: p.PID()}
	case "stop":
		a.mu.Lock()
		d := a.daemons[req.Handle]
		a.mu.Unlock()
		if d == nil {
			return response{Err: fmt.Sprintf("stop: no daemon %d", req.Handle)}
		}
		err := d.p.Stop(req.Grace)
		<-d.reported // the exit event goes out before this answer
		return response{Err: errText(err)}
	}
	return response{Err: fmt.Sprintf("unknown request %q", req.Kind)}
}

// stopAll stops every daemon still running, all at once.
func (a *agent) stopAll() {
	a.mu.Lock()
	ds := make([]*agentDaemon, 0, len(a.daemons))
	for _, d := range a.daemons {
		ds = append(ds, d)
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = d.p.Stop(agentStopGrace)
		}()
	}
	wg.Wait()
}
