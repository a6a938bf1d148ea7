package impair

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
)

// The probes' two ends. A socket that must stay open across several steps
// of the coordinator is held by a process of this binary (the hidden
// ProbeArg subcommand) started in its role, never by the coordinator in
// the role's namespace:
//
//   - in the server role, the listener: a TCP socket on ProbePort that
//     accepts and closes (the RTT probe's target) and a UDP socket on the
//     same address that counts and echoes the loss probe's datagrams;
//   - in the client role, the loss probe's sender: a UDP socket that sends
//     the paced stream and counts the echoes, open from the stream's first
//     datagram until the client's count closes, after the listener's.
//
// The coordinator drives each step (open the listener's count, send the
// stream, close the listener's count, close the client's) with one
// probeControlOp in the role, which hands a request to the process on the
// role's loopback (probeControl) and returns its answer: the same steps in
// the same order, with the same waits, as when the coordinator held the
// sockets itself. The RTT probe's connects are one op (probeRTTOp).

// ProbeArg is the hidden subcommand that runs a probe end: the twnsbench
// binary re-executed in a role, and test binaries through MaybeRunProbe.
const ProbeArg = "impair-probe"

// probeControl is where a probe process takes its requests: the role's
// loopback, on ProbePort.
var probeControl = net.JoinHostPort("127.0.0.1", strconv.Itoa(ProbePort))

// probeLeaf is the probe processes' cgroup leaf in their role, apart from
// the role's fixtures.
const probeLeaf = "impair-probe"

// probeStopGrace is how long a probe process gets to exit after SIGTERM.
const probeStopGrace = 2 * time.Second

// probeRequest is one step of a loss probe, for a probe process.
type probeRequest struct {
	Do    string // probeOpen, probeClose (the listener's), probeSend, probeSettle (the client's)
	ID    uint64 // the probe's id, in every datagram
	Count int    // probeOpen, probeSend: the stream's datagrams
	Rate  int    // probeSend: datagrams per second
	To    string // probeSend: the listener's host:port
}

const (
	probeOpen   = "open"
	probeClose  = "close"
	probeSend   = "send"
	probeSettle = "settle"
)

// bound is how long a step may take: sending, the stream's duration and a
// margin; any other, the marker barrier and a margin.
func (q probeRequest) bound() time.Duration {
	if q.Do == probeSend && q.Rate > 0 {
		return time.Duration(float64(q.Count)/float64(q.Rate)*float64(time.Second)) + 10*time.Second
	}
	return lossProbeBarrier + 5*time.Second
}

// probeReply is a probe process's answer to a step.
type probeReply struct {
	Err string
	// Read says a receiver read its marker within lossProbeBarrier
	// (probeOpen, probeClose, probeSettle).
	Read             bool
	Arrived, Echoed  uint64 // probeClose: the listener's count
	Sent, SendErrors uint64 // probeSend
	Returned         uint64 // probeSettle: the client's count
	SocketDrops      uint64 // probeClose, probeSettle
}

// probeControlOp hands one step to the role's probe process and waits for
// its answer, at most the step's bound.
var probeControlOp = role.NewOp("impair.probe-control", func(ctx context.Context, q probeRequest) (probeReply, error) {
	ctx, cancel := context.WithTimeout(ctx, q.bound())
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", probeControl)
	if err != nil {
		return probeReply{}, fmt.Errorf("probe process: %w", err)
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	c.SetDeadline(dl)
	if err := json.NewEncoder(c).Encode(q); err != nil {
		return probeReply{}, fmt.Errorf("probe process: %s: %w", q.Do, err)
	}
	var r probeReply
	if err := json.NewDecoder(c).Decode(&r); err != nil {
		return probeReply{}, fmt.Errorf("probe process: %s: read the answer: %w", q.Do, err)
	}
	if r.Err != "" {
		return r, fmt.Errorf("probe process: %s: %s", q.Do, r.Err)
	}
	return r, nil
})

// rttRequest is an RTT probe: count connects to Addr, Gap apart.
type rttRequest struct {
	Addr  string
	Count int
	Gap   time.Duration
}

// rttResult is what an RTT probe measured; LastErr is the last failed
// connect's error.
type rttResult struct {
	RTTs    []time.Duration
	Failed  int
	LastErr string
}

// probeRTTOp makes an RTT probe's connects, one after another, from the
// role it runs in.
var probeRTTOp = role.NewOp("impair.probe-rtt", func(ctx context.Context, q rttRequest) (rttResult, error) {
	var r rttResult
	for i := range q.Count {
		if err := ctx.Err(); err != nil {
			return rttResult{}, err
		}
		if i > 0 && q.Gap > 0 {
			if err := sleepCtx(ctx, q.Gap); err != nil { // pacing the probes, not waiting for a condition
				return rttResult{}, err
			}
		}
		d, err := connectRTT(q.Addr)
		if err != nil {
			r.Failed++
			r.LastErr = err.Error()
			continue
		}
		r.RTTs = append(r.RTTs, d)
	}
	return r, nil
})

// connectRTT is one connect's round trip: the kernel's handshake RTT, or
// the connect's wall time where the kernel has none.
func connectRTT(addr string) (time.Duration, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if k := handshakeRTT(c); k > 0 {
		d = k
	}
	return d, nil
}

// handshakeRTT is the kernel's RTT sample of a fresh connection, or 0.
func handshakeRTT(c net.Conn) time.Duration {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return 0
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	var rtt time.Duration
	raw.Control(func(fd uintptr) {
		if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			rtt = time.Duration(info.Rtt) * time.Microsecond
		}
	})
	return rtt
}

// ProbeRTT measures the round trip from client to addr (host:port of a
// listening TCP socket) with count TCP connects, one after another. Each
// connect's RTT is the kernel's own measurement of the handshake (the
// SYN-ACK's arrival minus the SYN's departure, TCP_INFO's tcpi_rtt of the
// fresh connection, in µs), so the prober's scheduling on a busy host does
// not count; where the kernel has none (a retransmitted SYN), the connect's
// wall time stands in. The median keeps a lost SYN's timeout out.
func ProbeRTT(ctx context.Context, client *role.Role, addr string, count int) (RTT, error) {
	return ProbeRTTEvery(ctx, client, addr, count, 0)
}

// ProbeRTTEvery is ProbeRTT with the probes started gap apart. Under jitter
// the gap keeps each probe's packets clear of the previous probe's: the
// impairment never reorders, so a packet queued right behind one that drew
// a long delay would inherit it, and back-to-back probes would measure the
// queue instead of the condition.
func ProbeRTTEvery(ctx context.Context, client *role.Role, addr string, count int, gap time.Duration) (RTT, error) {
	r, err := probeRTTOp.On(ctx, client, rttRequest{Addr: addr, Count: count, Gap: gap})
	if err != nil {
		return RTT{}, fmt.Errorf("probe RTT to %s: %w", addr, err)
	}
	if len(r.RTTs) == 0 {
		return RTT{Failed: r.Failed}, fmt.Errorf("probe RTT to %s from %s: every connect failed: %s", addr, client.Name(), r.LastErr)
	}
	return summarizeRTT(r.RTTs, r.Failed), nil
}

// Probe is the probes' two processes: the listener in the server role, on
// its address at ProbePort, and the loss probe's sender in the client
// role. One loss probe at a time.
type Probe struct {
	client, server *role.Role
	addr           string // the listener's host:port
	procs          []*proc.Process
	mu             sync.Mutex // held by a running loss probe
}

// StartProbe starts the listener in server and the sender in client, each
// in its role's own leaf probeLeaf, and waits until both take requests
// (the listener's sockets are open by then). bin has the hidden ProbeArg
// subcommand; "" is each role's twnsbench on its host (Self: this program
// for a role on this host).
func StartProbe(ctx context.Context, client, server *role.Role, bin string) (*Probe, error) {
	p := &Probe{client: client, server: server, addr: net.JoinHostPort(server.Addr().String(), strconv.Itoa(ProbePort))}
	for _, end := range []struct {
		r    *role.Role
		args []string
	}{
		{server, []string{"--listen", p.addr}},
		{client, nil},
	} {
		l, err := end.r.Leaf(ctx, probeLeaf)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("probe: %w", err), p.Close())
		}
		exe := bin
		if exe == "" {
			exe = l.Self()
		}
		pr, err := l.Start(ctx, l.Program(ProbeArg, append([]string{exe, ProbeArg}, end.args...)...))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("probe in %s: %w", end.r.Name(), err), p.Close())
		}
		p.procs = append(p.procs, pr)
		wctx, cancel := context.WithTimeout(ctx, readyTimeout)
		err = l.WaitTCP(wctx, probeControl, pr)
		cancel()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("probe in %s: %w", end.r.Name(), err), p.Close())
		}
	}
	return p, nil
}

// Addr is where to probe: the listener's host:port.
func (p *Probe) Addr() string { return p.addr }

// Close stops both processes. Safe to call twice.
func (p *Probe) Close() error {
	var errs []error
	for _, pr := range p.procs {
		if err := pr.Stop(probeStopGrace); err != nil {
			errs = append(errs, fmt.Errorf("probe: %w", err))
		}
	}
	p.procs = nil
	return errors.Join(errs...)
}
