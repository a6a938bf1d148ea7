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

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/textsafe"
)

// The wire carries a role's work to the twnsbench copy on the role's host
// (Agent) and its answers back: one JSON object per line each way, over
// the stdin and stdout of that copy's SSH session. Requests run
// concurrently on the far side; answers carry the request's ID; a daemon's
// exit comes as an event (ID 0) naming the daemon's handle.

type request struct {
	ID      uint64          `json:"id"`
	Kind    string          `json:"kind"` // call, start, run, stop, cancel
	NetNS   string          `json:"netns,omitempty"`
	Op      string          `json:"op,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Program *proc.Program   `json:"program,omitempty"`
	Handle  uint64          `json:"handle,omitempty"` // start, stop: the daemon's handle
	Grace   time.Duration   `json:"grace,omitempty"`
	Cancel  uint64          `json:"cancel,omitempty"` // cancel: the request to cancel
}

type response struct {
	ID     uint64          `json:"id"`
	Err    string          `json:"err,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Run    *proc.Result    `json:"run,omitempty"`
	PID    int             `json:"pid,omitempty"`
	Handle uint64          `json:"handle,omitempty"` // an exit event's daemon
	Exited bool            `json:"exited,omitempty"`
	// ended is the connection's own error when the answer is end's, not
	// the far side's: it reaches the caller with its type.
	ended error
}

// Wire is the orchestrator's end of the wire to one host's twnsbench copy
// (Agent), carried by that copy's SSH session (remote.Conn).
type Wire struct {
	host string // "client host 10.0.0.2", for errors
	enc  *json.Encoder
	wmu  sync.Mutex

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan response
	daemons map[uint64]*daemon
	err     error // why the connection ended; set once
	done    chan struct{}
}

// daemon is a started daemon's end as the orchestrator holds it: exited
// is set once the start's answer arrived; an exit event that came first
// waits in early.
type daemon struct {
	exited func(error)
	early  *error
}

// NewConn is the orchestrator's end of the wire to host, reading the
// copy's answers from r and writing requests to w. It ends, failing every
// call in flight and ending every daemon it started, when r does.
func NewWire(host string, r io.Reader, w io.Writer) *Wire {
	c := &Wire{host: host, enc: json.NewEncoder(w), pending: map[uint64]chan response{},
		daemons: map[uint64]*daemon{}, done: make(chan struct{})}
	go c.read(r)
	return c
}

// Done is closed when the connection has ended; Err says why.
func (c *Wire) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, nil while it lasts.
func (c *Wire) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Wire) read(r io.Reader) {
	sc := lineScanner(r)
	for sc.Scan() {
		var resp response
		if err := json.Unmarshal(sc.Bytes(), &resp); err != nil {
			c.end(fmt.Errorf("%s: bad answer: %w", c.host, err))
			return
		}
		c.deliver(resp)
	}
	err := sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		c.end(fmt.Errorf("%s: an answer longer than %d MiB: %w", c.host, MaxLine>>20, err))
		return
	}
	if err == nil {
		err = io.EOF
	}
	c.end(&LostError{Host: c.host, Why: "connection lost (" + err.Error() + ")"})
}

// MaxLine bounds one line of the wire, either way: a request or an answer
// (a program's whole output, a fetched log) is one line, and a far side
// that sends more ends the connection instead of filling this side's
// memory.
const MaxLine = 64 << 20

// lineScanner reads the wire's lines from r, each within MaxLine.
func lineScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	return sc
}

// farError is an error the far side sent: its text is the host's, so its
// control characters are quoted (textsafe.Quote) before anything prints it.
func farError(s string) error { return errors.New(textsafe.Quote(s)) }

func (c *Wire) deliver(resp response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if resp.ID == 0 && resp.Exited {
		d := c.daemons[resp.Handle]
		if d == nil {
			return
		}
		var err error
		if resp.Err != "" {
			err = farError(resp.Err)
		}
		c.ended(resp.Handle, d, err)
		return
	}
	if ch, ok := c.pending[resp.ID]; ok {
		delete(c.pending, resp.ID)
		ch <- resp
	}
}

// end fails what is in flight and ends every daemon: on a lost connection
// the copy on the far side stops them itself.
func (c *Wire) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	for id, ch := range c.pending {
		delete(c.pending, id)
		ch <- response{ID: id, Err: err.Error(), ended: err}
	}
	for h, d := range c.daemons {
		c.ended(h, d, err)
	}
	close(c.done)
}

// ended delivers a daemon's end, or keeps it for start when its start has
// not been answered yet. c.mu is held.
func (c *Wire) ended(handle uint64, d *daemon, err error) {
	if d.exited == nil {
		d.early = &err
		return
	}
	delete(c.daemons, handle)
	d.exited(err)
}

// roundTrip sends req and waits for its answer; when ctx ends first it
// asks the far side to cancel it and still waits for the answer, which
// the far side gives once the work has stopped.
func (c *Wire) roundTrip(ctx context.Context, req request) (response, error) {
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return response{}, c.err
	}
	c.next++
	req.ID = c.next
	c.pending[req.ID] = ch
	if req.Kind == "start" {
		req.Handle = req.ID
		c.daemons[req.Handle] = &daemon{}
	}
	c.mu.Unlock()
	if err := c.send(req); err != nil {
		return response{}, err
	}
	var resp response
	select {
	case resp = <-ch:
	case <-ctx.Done():
		_ = c.send(request{Kind: "cancel", Cancel: req.ID})
		resp = <-ch
	}
	if resp.ended != nil {
		return resp, resp.ended
	}
	return resp, nil
}

func (c *Wire) send(req request) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.enc.Encode(req); err != nil {
		// A write that fails has lost the connection as a read's end does:
		// the reader may not have seen its end yet.
		lost := &LostError{Host: c.host, Why: "connection lost (send: " + err.Error() + ")"}
		c.end(lost)
		return lost
	}
	return nil
}

// Host is the role namespace netns on the far side of c, for Remote.
func (c *Wire) Host(netns string) host { return wireHost{c: c, netns: netns} }

// wireHost is a role whose namespace is on the far side of a Wire.
type wireHost struct {
	c     *Wire
	netns string
}

func (h wireHost) call(ctx context.Context, op string, args []byte) ([]byte, error) {
	resp, err := h.c.roundTrip(ctx, request{Kind: "call", NetNS: h.netns, Op: op, Args: args})
	if err != nil {
		return nil, err
	}
	if resp.Err != "" {
		return nil, farError(resp.Err)
	}
	return resp.Result, nil
}

func (h wireHost) start(ctx context.Context, p proc.Program) (*proc.Process, error) {
	resp, err := h.c.roundTrip(ctx, request{Kind: "start", Program: &p})
	if err != nil {
		return nil, err
	}
	handle := resp.ID
	if resp.Err != "" {
		h.c.mu.Lock()
		delete(h.c.daemons, handle)
		h.c.mu.Unlock()
		return nil, farError(resp.Err)
	}
	d, exited := proc.Attach(p.Name, resp.PID, func(grace time.Duration) error {
		// The far side stops it as a local daemon is stopped; the exit
		// event then closes Done.
		// The far side answers after it sent the exit event, which
		// arrives first on the one stream. proc's stop takes no context:
		// a stop is teardown, bounded by grace on the far side and by the
		// connection's end here, never by the run's cancelled context.
		r, err := h.c.roundTrip(context.Background(), request{Kind: "stop", Handle: handle, Grace: grace})
		if err == nil && r.Err != "" {
			err = farError(r.Err)
		}
		return err
	})
	h.c.mu.Lock()
	if dm := h.c.daemons[handle]; dm.early != nil {
		delete(h.c.daemons, handle)
		exited(*dm.early)
	} else {
		dm.exited = exited
	}
	h.c.mu.Unlock()
	return d, nil
}

func (h wireHost) run(ctx context.Context, p proc.Program) (proc.Result, error) {
	resp, err := h.c.roundTrip(ctx, request{Kind: "run", Program: &p})
	if err != nil {
		return proc.Result{}, err
	}
	var res proc.Result
	if resp.Run != nil {
		res = *resp.Run
	}
	if resp.Err != "" {
		return res, farError(resp.Err)
	}
	return res, nil
}

func (c *Wire) callHost(ctx context.Context, op string, args []byte) ([]byte, error) {
	return c.Host("").call(ctx, op, args)
}

func (c *Wire) roleHost(netns string) (host, error) { return c.Host(netns), nil }

func (h wireHost) roleHost(netns string) (host, error) { return h.c.roleHost(netns) }

// The machine at the far end of the wire: a role there runs its host ops
// through the copy, in the host's own namespace.
func (h wireHost) callHost(ctx context.Context, op string, args []byte) ([]byte, error) {
	return h.c.callHost(ctx, op, args)
}

// Via is r with its work carried over c to the copy serving r's namespace
// on the far side: how a role on another host is reached, and how the
// tests prove that the wire carries every op of a role.
func Via(c *Wire, r *Role) *Role {
	v := *r
	v.host = c.Host(r.netns)
	return &v
}

// LostError is a connection to a host's copy ended because the host went
// silent (a cut link, a host down): every call in flight and after fails
// with it, so that the run can say once which host it lost.
type LostError struct {
	Host string // the role and the login ("server root@10.0.0.3:22")
	Why  string
	// Silent: the far side stopped answering pings (KeepAlive), so the
	// link itself, not just this stream, is taken for dead.
	Silent bool
}

func (e *LostError) Error() string { return e.Host + ": " + e.Why + ": link lost" }

// PingInterval is how often KeepAlive asks the far side whether it is
// there; an agent gives up after a few intervals without a request.
const PingInterval = 3 * time.Second

// KeepAlive pings the far side every PingInterval until the connection
// ends, and ends it when a ping is not answered within 3 intervals: a cut
// link, a host down or a frozen agent then fails the calls in flight
// instead of holding them forever. It is the one keepalive of a link
// that carries an agent: the agent itself answers, where an SSH-level
// probe is answered by sshd while the agent is stopped.
func (c *Wire) KeepAlive() {
	go func() {
		t := time.NewTicker(PingInterval)
		defer t.Stop()
		for {
			select {
			case <-c.done:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*PingInterval)
			_, err := c.ping(ctx)
			cancel()
			if err != nil {
				c.end(&LostError{Host: c.host, Why: fmt.Sprintf("no answer to a ping for %v", 3*PingInterval), Silent: true})
				return
			}
		}
	}()
}

// ping asks the far side for an answer; unlike other requests, a ping is
// not cancelled on the far side (it does no work), only given up on.
func (c *Wire) ping(ctx context.Context) (response, error) {
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return response{}, c.err
	}
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.send(request{ID: id, Kind: "ping"}); err != nil {
		return response{}, err
	}
	select {
	case r := <-ch:
		if r.Err != "" {
			return r, farError(r.Err)
		}
		return r, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return response{}, ctx.Err()
	}
}
