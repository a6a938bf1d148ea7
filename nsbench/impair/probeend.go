package impair

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// A probe process: the listener (in the server role) or the loss probe's
// sender (in the client role), taking the coordinator's steps on the
// role's loopback (probe.go).

// MaybeRunProbe runs a probe end and exits when this process was started
// as one (os.Args[1] == ProbeArg); otherwise it returns at once. Test
// binaries call it first thing in TestMain; the twnsbench binary has a
// hidden subcommand instead.
func MaybeRunProbe() { proc.MaybeRunHidden(ProbeArg, ProbeMain) }

// ProbeMain is a probe end's command line: [--listen host:port] makes it
// the listener. It takes requests on probeControl until ctx ends.
func ProbeMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet(ProbeArg, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	listen := fs.String("listen", "", "listen on host:port: TCP accepts and closes, UDP counts and echoes the loss probe")
	if err := fs.Parse(args); err != nil {
		return err
	}
	e := &probeEnd{}
	if *listen != "" {
		l, err := listenProbe(*listen)
		if err != nil {
			return err
		}
		defer l.close()
		e.listener = l
	}
	ctl, err := net.Listen("tcp", probeControl)
	if err != nil {
		return fmt.Errorf("control: %w", err)
	}
	fmt.Fprintf(out, "probe: listening on %q, requests on %s\n", *listen, probeControl)
	go func() {
		<-ctx.Done()
		ctl.Close()
	}()
	for {
		c, err := ctl.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("control: %w", err)
		}
		go e.serve(ctx, c)
	}
}

// probeEnd is a probe process: the listener (in the server role) or the
// loss probe's sender (in the client role) between its steps.
type probeEnd struct {
	listener *probeListener // nil in the client role
	mu       sync.Mutex     // one step at a time
	sender   *lossSender    // the client's open count, between probeSend and probeSettle
}

// serve answers one request on c; a connection without one (a readiness
// check) is closed.
func (e *probeEnd) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var q probeRequest
	if err := json.NewDecoder(c).Decode(&q); err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	ctx, cancel := context.WithTimeout(ctx, q.bound())
	defer cancel()
	e.mu.Lock()
	r, err := e.step(ctx, q)
	e.mu.Unlock()
	if err != nil {
		r.Err = err.Error()
	}
	json.NewEncoder(c).Encode(r)
}

func (e *probeEnd) step(ctx context.Context, q probeRequest) (probeReply, error) {
	switch q.Do {
	case probeOpen, probeClose:
		if e.listener == nil {
			return probeReply{}, fmt.Errorf("%s: not the listener", q.Do)
		}
		if q.Do == probeOpen {
			return e.listener.open(ctx, q)
		}
		return e.listener.closeCount(ctx, q)
	case probeSend:
		if e.sender != nil {
			e.sender.close()
		}
		s, r, err := sendStream(ctx, q)
		e.sender = s
		return r, err
	case probeSettle:
		if e.sender == nil || e.sender.id != q.ID {
			return probeReply{}, fmt.Errorf("settle: no stream %d sent", q.ID)
		}
		s := e.sender
		e.sender = nil
		return s.settle(ctx)
	}
	return probeReply{}, fmt.Errorf("unknown step %q", q.Do)
}

// probeListener is the listener's sockets, in its probe process: a TCP
// listener that accepts and closes, and a UDP socket on the same address
// that counts and echoes the loss probe's datagrams. The handshake is the
// kernel's alone, so probing touches no fixture (sshd's per-source
// penalties, in OpenSSH 9.8 and later, would block a client that connects
// 20 times without logging in).
type probeListener struct {
	ln     net.Listener
	udp    *net.UDPConn
	marker *net.UDPConn // from the same namespace to udp: the loss probe's markers

	mu     sync.Mutex
	stream *lossStream // the loss probe running, if any
}

// listenProbe listens on addr (host:port) and serves both sockets until
// closed.
func listenProbe(addr string) (*probeListener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("probe listener: %w", err)
	}
	var udp, marker *net.UDPConn
	pc, err := net.ListenPacket("udp", addr)
	if err == nil {
		udp = pc.(*net.UDPConn)
		if err = probeSocket(udp); err == nil {
			marker, err = net.DialUDP("udp", nil, udp.LocalAddr().(*net.UDPAddr))
		}
	}
	if err != nil {
		ln.Close()
		if pc != nil {
			pc.Close()
		}
		return nil, fmt.Errorf("probe listener: %w", err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			c.Close()
		}
	}()
	p := &probeListener{ln: ln, udp: udp, marker: marker}
	go p.serveUDP()
	return p, nil
}

// close stops listening.
func (p *probeListener) close() {
	p.ln.Close()
	p.udp.Close()
	p.marker.Close()
}

// lossStream is the listener's count of one probe's datagrams, open
// between the probe's two markers.
type lossStream struct {
	id      uint64
	seen    []bool
	arrived uint64
	echoed  uint64
	open    bool
	// opened and closed are closed when the listener reads the markers;
	// drops0 and drops1 are the socket's overflow count they carried.
	opened, closed chan struct{}
	drops0, drops1 uint64
}

// serveUDP counts and echoes the loss probe's datagrams until the socket
// closes. A datagram is 16 bytes: the probe's id, then its sequence
// number or a marker; one of another probe (a late one of the last) is
// dropped. One goroutine reads, counts and echoes in arrival order, so
// when it reads the closing marker every echo of what came before is sent.
func (p *probeListener) serveUDP() {
	buf, oob := make([]byte, 64), make([]byte, 64)
	for {
		n, oobn, _, from, err := p.udp.ReadMsgUDP(buf, oob)
		if err != nil {
			return // closed
		}
		if n != 16 {
			continue
		}
		id, seq := binary.BigEndian.Uint64(buf), binary.BigEndian.Uint64(buf[8:])
		p.mu.Lock()
		s := p.stream
		if s == nil || s.id != id {
			p.mu.Unlock()
			continue
		}
		switch {
		case seq == markOpen && s.closed == nil:
			s.drops0, s.open = overflowCount(oob[:oobn]), true
			close(s.opened)
			s.closed = make(chan struct{})
		case seq == markClose && s.open:
			s.drops1, s.open = overflowCount(oob[:oobn]), false
			close(s.closed)
		case !s.open || seq >= uint64(len(s.seen)) || s.seen[seq]:
		default:
			s.seen[seq] = true
			s.arrived++
			p.mu.Unlock()
			if _, err := p.udp.WriteTo(buf[:n], from); err == nil {
				p.mu.Lock()
				s.echoed++
				p.mu.Unlock()
			}
			continue
		}
		p.mu.Unlock()
	}
}

// open starts the count of probe q.ID (replacing any earlier one, whose
// coordinator has given up on it): from its opening marker on, the
// socket's overflow count is this probe's. Read says the listener read the
// marker within lossProbeBarrier.
func (p *probeListener) open(ctx context.Context, q probeRequest) (probeReply, error) {
	if q.Count <= 0 {
		return probeReply{}, fmt.Errorf("open: %d datagrams", q.Count)
	}
	s := &lossStream{id: q.ID, seen: make([]bool, q.Count), opened: make(chan struct{})}
	p.mu.Lock()
	p.stream = s
	p.mu.Unlock()
	if err := sendMarker(p.marker, s.id, markOpen); err != nil {
		return probeReply{}, fmt.Errorf("open the listener's count: %w", err)
	}
	if err := waitMarker(ctx, s.opened); err != nil {
		p.mu.Lock()
		p.stream = nil
		p.mu.Unlock()
		return probeReply{}, nil
	}
	return probeReply{Read: true}, nil
}

// closeCount closes probe q.ID's count with the closing marker, queued
// behind every datagram that has reached the socket, and returns it. A
// count the listener did not read up to within lossProbeBarrier stops
// where it is (Read false).
func (p *probeListener) closeCount(ctx context.Context, q probeRequest) (probeReply, error) {
	p.mu.Lock()
	s := p.stream
	p.mu.Unlock()
	if s == nil || s.id != q.ID || s.closed == nil {
		return probeReply{}, fmt.Errorf("close: probe %d is not open", q.ID)
	}
	if err := sendMarker(p.marker, s.id, markClose); err != nil {
		return probeReply{}, fmt.Errorf("close the listener's count: %w", err)
	}
	r := probeReply{Read: waitMarker(ctx, s.closed) == nil}
	p.mu.Lock()
	s.open = false // a count not closed by its marker stops here
	r.Arrived, r.Echoed = s.arrived, s.echoed
	r.SocketDrops = s.drops1 - s.drops0
	p.stream = nil
	p.mu.Unlock()
	return r, nil
}

// lossSender is the client's side of one loss probe, in its probe process:
// the socket the stream leaves from and its echoes return to, and the one
// that sends it its closing marker over the client's loopback.
type lossSender struct {
	id           uint64
	conn, marker *net.UDPConn
	back         *echoCount
}

// sendStream opens the client's sockets and sends q's datagrams to q.To,
// paced at q.Rate, counting the echoes as they return; the count stays
// open for settle.
func sendStream(ctx context.Context, q probeRequest) (*lossSender, probeReply, error) {
	if q.Count <= 0 || q.Rate <= 0 {
		return nil, probeReply{}, fmt.Errorf("send: %d datagrams at %d/s", q.Count, q.Rate)
	}
	addr, err := net.ResolveUDPAddr("udp", q.To)
	if err != nil {
		return nil, probeReply{}, err
	}
	conn, err := net.ListenUDP("udp", &net.UDPAddr{})
	if err != nil {
		return nil, probeReply{}, err
	}
	local := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: conn.LocalAddr().(*net.UDPAddr).Port}
	marker, err := net.DialUDP("udp", nil, local)
	if err != nil {
		conn.Close()
		return nil, probeReply{}, err
	}
	s := &lossSender{id: q.ID, conn: conn, marker: marker, back: &echoCount{seen: make([]bool, q.Count), closed: make(chan struct{})}}
	if err := probeSocket(conn); err != nil {
		s.close()
		return nil, probeReply{}, err
	}
	go s.back.read(conn, s.id)

	var r probeReply
	// Pacing: by each tick, as many datagrams as the rate allows since the
	// start, so a late tick catches up instead of slowing the probe.
	msg := make([]byte, 16)
	binary.BigEndian.PutUint64(msg, s.id)
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	next := 0
	for next < q.Count {
		due := min(q.Count, 1+int(time.Since(start).Seconds()*float64(q.Rate)))
		for ; next < due; next++ {
			binary.BigEndian.PutUint64(msg[8:], uint64(next))
			if _, err := conn.WriteToUDP(msg, addr); err != nil {
				r.SendErrors++
				continue
			}
			r.Sent++
		}
		if next == q.Count {
			break
		}
		select {
		case <-ctx.Done():
			s.close()
			return nil, probeReply{}, ctx.Err()
		case <-tick.C: // pacing the stream, not waiting for a condition
		}
	}
	return s, r, nil
}

// settle closes the client's count with its marker over the loopback and
// returns it (Read false when the client did not read up to the marker
// within lossProbeBarrier).
func (s *lossSender) settle(ctx context.Context) (probeReply, error) {
	defer s.close()
	if err := sendMarker(s.marker, s.id, markClose); err != nil {
		return probeReply{}, fmt.Errorf("close the client's count: %w", err)
	}
	r := probeReply{Read: waitMarker(ctx, s.back.closed) == nil}
	s.conn.Close()
	r.Returned, r.SocketDrops = s.back.result()
	return r, nil
}

func (s *lossSender) close() {
	s.conn.Close()
	s.marker.Close()
}
