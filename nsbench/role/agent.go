package role

import (
	"bufio"
	"context"
	"encoding/json"
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

// Agent is the far end of a Conn: the twnsbench copy on a role's host,
// serving requests read from r and answering on w. When r ends (the
// orchestrator closed the session, died, or the link was cut and the SSH
// server hung up) it stops every daemon it started, then runs cleanup —
// what the copy built for the run — and returns.
func Agent(ctx context.Context, r io.Reader, w io.Writer, cleanup func(context.Context) error) error {
	a := &agent{enc: json.NewEncoder(w), daemons: map[uint64]*agentDaemon{}, cancels: map[uint64]context.CancelFunc{}}
	ctx, cancelAll := context.WithCancel(ctx)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	var inflight sync.WaitGroup
	var readErr error
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			readErr = fmt.Errorf("agent: bad request: %w", err)
			break
		}
		if req.Kind == "cancel" {
			a.cancel(req.Cancel)
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
	if readErr == nil {
		readErr = sc.Err()
	}
	cancelAll()
	inflight.Wait()
	a.stopAll()
	var cerr error
	if cleanup != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cerr = cleanup(cctx)
		cancel()
	}
	if readErr != nil {
		return readErr
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
		res, err := proc.Run(ctx, *req.Program)
		return response{Run: &res, Err: errText(err)}
	case "start":
		if req.Program == nil {
			return response{Err: "start: no program"}
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
