package impair

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// The forwarder: the userspace impairment's process. It runs in the switch
// namespace with the role ports detached from the bridge, and switches
// frames between them as the bridge would, except that what arrives on an
// impaired port (the client's or the server's egress) first passes a loss
// draw and then a fixed delay. Frames from an unimpaired port (the relay's)
// are forwarded at once.
//
// Per port, one goroutine reads frames (AF_PACKET, blocking reads on a
// locked thread) and one releases the delayed frames on time
// (clock_nanosleep on CLOCK_MONOTONIC with a 1 µs timer slack: Go's own
// timers are millisecond-grained here). Frames keep their virtio-net header
// (PACKET_VNET_HDR) from reception to transmission, so a frame whose
// checksum the sender left to the device (CHECKSUM_PARTIAL) stays so and
// the receiver does not drop it as corrupt.

// ForwarderArg is the hidden subcommand that runs the forwarder: the
// twnsbench binary has it, and test binaries dispatch it through
// MaybeRunForwarder.
const ForwarderArg = "impair-forwarder"

// ForwarderConfig is the forwarder's whole configuration, passed as JSON on
// its command line.
type ForwarderConfig struct {
	Control string       `json:"control"` // unix socket that serves Status
	Ports   []PortConfig `json:"ports"`
	// RTPriority, when positive, runs the readers and releasers SCHED_FIFO
	// at that priority.
	RTPriority int `json:"rt_priority,omitempty"`
	// Narrow, when set, checks every frame received on any port against
	// the narrow hop before the rest of the emulation.
	Narrow NarrowHop `json:"narrow,omitempty"`
}

// PortConfig is one switch port and what happens to the frames it receives.
type PortConfig struct {
	Name     string  `json:"name"` // interface in the forwarder's namespace
	Role     string  `json:"role"` // whose egress the port receives
	Impaired bool    `json:"impaired"`
	DelayNs  int64   `json:"delay_ns,omitempty"`
	JitterNs int64   `json:"jitter_ns,omitempty"` // ± around DelayNs, uniform
	RateBps  uint64  `json:"rate_bps,omitempty"`  // the emulated link's rate; 0 is unlimited
	LossPct  float64 `json:"loss_pct,omitempty"`
	Limit    int     `json:"limit,omitempty"`
	Seed     uint64  `json:"seed,omitempty"`
	Stream   uint64  `json:"stream,omitempty"` // loss sequence per direction
}

// Status is what the control socket answers: the configuration in force
// and cumulative counters since the forwarder started.
type Status struct {
	PID   int          `json:"pid"`
	Sched string       `json:"sched"` // the threads' scheduling class
	Ports []PortStatus `json:"ports"`
	// Narrow is the narrow hop in force (zero: none).
	Narrow NarrowHop `json:"narrow,omitempty"`
}

const (
	vnetHdrLen = 10 // struct virtio_net_hdr
	ethHdrLen  = 14
	rxBatch    = 64                // frames per recvmmsg
	rxFrameMax = vnetHdrLen + 9216 // jumbo frames fit; longer ones count as send errors
	// rxTimeout bounds a blocking read, so a reader notices the end of its
	// context.
	rxTimeout = 200 * time.Millisecond
	// socketBuf is each socket's receive buffer: a burst the reader has
	// not caught up with waits there instead of being dropped.
	socketBuf = 16 << 20
)

// MaybeRunForwarder runs the forwarder and exits when this process was
// started as one (os.Args[1] == ForwarderArg); otherwise it returns at
// once. Test binaries call it first thing in TestMain; the twnsbench binary
// has a hidden subcommand instead.
func MaybeRunForwarder() { proc.MaybeRunHidden(ForwarderArg, ForwarderMain) }

// ForwarderMain is the forwarder's command line: --spec JSON. It runs until
// ctx ends, prints its counters to out on SIGUSR1 and at exit.
func ForwarderMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet(ForwarderArg, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	specJSON := fs.String("spec", "", "the ForwarderConfig as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var spec ForwarderConfig
	if err := json.Unmarshal([]byte(*specJSON), &spec); err != nil {
		return fmt.Errorf("decode --spec: %w", err)
	}
	return runForwarder(ctx, spec, out)
}

type fwdPort struct {
	PortConfig
	fwdCounters
	narrowCounters
	idx  int
	fd   int
	loss *lossGen   // nil: no loss
	line *delayLine // nil: forwarded at once
}

type forwarder struct {
	ports      []*fwdPort
	fdb        *fdb
	clk        monoClock
	bufs       sync.Pool
	rtPriority int
	hop        NarrowHop

	sched atomic.Pointer[string] // the scheduling class the threads got
}

func runForwarder(ctx context.Context, spec ForwarderConfig, out io.Writer) (err error) {
	if len(spec.Ports) < 2 {
		return errors.New("need at least two ports")
	}
	// Readers and releasers block in syscalls on their own threads; give
	// the scheduler enough Ps that no goroutine ever waits for one.
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 2*len(spec.Ports)+2))
	f := &forwarder{fdb: newFDB(), clk: newMonoClock(), rtPriority: spec.RTPriority, hop: spec.Narrow}
	f.bufs.New = func() any { b := make([]byte, 0, 2048); return &b }
	defer func() {
		for _, p := range f.ports {
			if p.fd > 0 {
				unix.Close(p.fd)
			}
		}
	}()
	for i, ps := range spec.Ports {
		p := &fwdPort{PortConfig: ps, idx: i}
		if p.fd, err = openPort(ps.Name); err != nil {
			return err
		}
		if ps.Impaired {
			p.loss = newLossGen(ps.LossPct, ps.Seed, ps.Stream)
			if ps.DelayNs > 0 || ps.JitterNs > 0 || ps.RateBps > 0 {
				limit := ps.Limit
				if limit <= 0 {
					limit = DefaultLimit
				}
				p.line = newShapedLine(lineShape{Delay: ps.DelayNs, Jitter: ps.JitterNs, RateBps: ps.RateBps,
					Seed: ps.Seed, Stream: ps.Stream}, limit)
			}
		}
		f.ports = append(f.ports, p)
	}
	os.Remove(spec.Control) // a socket file left by a killed forwarder
	ln, err := net.Listen("unix", spec.Control)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	defer os.Remove(spec.Control)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range f.ports {
		wg.Add(1)
		go func() { defer wg.Done(); f.receive(ctx, p) }()
		if p.line != nil {
			wg.Add(1)
			go func() { defer wg.Done(); f.release(ctx, p) }()
		}
	}
	go func() { <-ctx.Done(); ln.Close() }()
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	go func() {
		for {
			select {
			case <-usr1:
				f.writeStatus(out)
			case <-ctx.Done():
				return
			}
		}
	}()
	fmt.Fprintf(out, "%s: forwarding between %d ports, control %s\n", ForwarderArg, len(f.ports), spec.Control)
	for {
		c, err := ln.Accept()
		if err != nil {
			break // closed at the end of ctx
		}
		f.writeStatus(c)
		c.Close()
	}
	cancel()
	wg.Wait()
	f.writeStatus(out)
	return nil
}

func (f *forwarder) writeStatus(w io.Writer) {
	b, _ := json.Marshal(f.status())
	w.Write(append(b, '\n'))
}

func (f *forwarder) status() Status {
	st := Status{PID: os.Getpid(), Sched: "SCHED_OTHER", Narrow: f.hop}
	if s := f.sched.Load(); s != nil {
		st.Sched = *s
	}
	for _, p := range f.ports {
		backlog := 0
		if p.line != nil {
			backlog = p.line.backlog()
		}
		st.Ports = append(st.Ports, PortStatus{PortConfig: p.PortConfig, PortCounts: p.read(p.fd, backlog), Narrow: p.readNarrow()})
	}
	return st
}

// openPort opens an AF_PACKET socket that receives every frame arriving on
// the interface (not the ones sent from it) with its virtio-net header.
func openPort(name string) (int, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return -1, fmt.Errorf("port %s: %w", name, err)
	}
	// Protocol 0 receives nothing until bind names the interface, so no
	// frame of another interface slips in.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("port %s: socket: %w", name, err)
	}
	fail := func(what string, err error) (int, error) {
		unix.Close(fd)
		return -1, fmt.Errorf("port %s: %s: %w", name, what, err)
	}
	for _, o := range []struct {
		name       string
		level, opt int
		v          int
	}{
		{"PACKET_VNET_HDR", unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1},
		{"PACKET_IGNORE_OUTGOING", unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1},
		{"PACKET_QDISC_BYPASS", unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1},
		{"SO_RCVBUFFORCE", unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, socketBuf},
		{"SO_SNDBUFFORCE", unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, socketBuf},
		{"SO_TIMESTAMPNS", unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1},
	} {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, o.v); err != nil {
			return fail(o.name, err)
		}
	}
	tv := unix.NsecToTimeval(rxTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fail("SO_RCVTIMEO", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		return fail("bind", err)
	}
	if childOfHost(name) {
		return fd, nil
	}
	mreq := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return fail("promiscuous mode", err)
	}
	return fd, nil
}

// childOfHost reports whether the port is a macvlan or ipvlan child of a
// host's interface (an edge's wire0): it is never made promiscuous, which
// would make its parent, the host's own interface, promiscuous too; it
// only ever receives its own MAC's frames anyway.
func childOfHost(name string) bool {
	l, err := netlink.LinkByName(name)
	return err == nil && (l.Type() == "macvlan" || l.Type() == "ipvlan")
}

func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// receive reads p's frames until ctx ends: learn, draw loss, then forward
// at once or queue for the delay, which counts from the frame's arrival.
func (f *forwarder) receive(ctx context.Context, p *fwdPort) {
	runtime.LockOSThread()
	f.realtime()
	b := newRecvBatch(rxBatch, rxFrameMax)
	for ctx.Err() == nil {
		n, err := b.recv(p.fd)
		if err != nil {
			if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
				time.Sleep(time.Millisecond) // e.g. ENETDOWN while a port is down
			}
			continue
		}
		now, real := f.clk.now(), time.Now().UnixNano()
		for i := range n {
			frame, stamp, truncated := b.frame(i)
			if truncated || len(frame) < vnetHdrLen+ethHdrLen {
				p.received.Add(1)
				p.sendErrors.Add(1) // cannot be passed on whole
				continue
			}
			arrival := now
			if age := real - stamp; stamp > 0 && age >= 0 && age < int64(time.Second) {
				arrival = now - age
			}
			f.handle(p, frame, arrival)
		}
	}
}

// handle takes one received frame through the emulation: the narrow hop
// (when set), then the loss draw and the delay.
func (f *forwarder) handle(p *fwdPort, frame []byte, arrival int64) {
	p.received.Add(1)
	p.receivedBytes.Add(uint64(len(frame) - vnetHdrLen))
	f.fdb.learn([6]byte(frame[vnetHdrLen+6:vnetHdrLen+12]), p.idx)
	if f.hop.MTU == 0 {
		f.impair(p, frame, arrival)
		return
	}
	for _, fr := range f.narrow(p, frame) {
		f.impair(p, fr, arrival)
	}
}

// impair draws the loss for frame and forwards it at once or queues it
// for its delay.
func (f *forwarder) impair(p *fwdPort, frame []byte, arrival int64) {
	if p.loss != nil && p.loss.drop() {
		p.lossDrops.Add(1)
		return
	}
	if p.line == nil {
		f.forward(p, frame)
		return
	}
	held := f.copyFrame(frame)
	if !p.line.pushSized(arrival, held, len(frame)-vnetHdrLen) {
		p.queueDrops.Add(1)
		f.freeFrame(held)
		return
	}
	p.backlogBytes.Add(int64(len(frame) - vnetHdrLen))
}

// realtime moves the calling thread to SCHED_FIFO when the spec asks: an
// emulated wire should not wait for CPU behind the programs it carries
// (netem runs in softirq context, ahead of every process). A failure
// leaves the thread as it was and is reported in the status.
func (f *forwarder) realtime() {
	if f.rtPriority <= 0 {
		return
	}
	err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(f.rtPriority)}, 0)
	s := fmt.Sprintf("SCHED_FIFO %d", f.rtPriority)
	if err != nil {
		s = fmt.Sprintf("SCHED_OTHER (SCHED_FIFO %d refused: %v)", f.rtPriority, err)
	}
	f.sched.CompareAndSwap(nil, &s)
}

// release passes p's delayed frames on when they are due.
func (f *forwarder) release(ctx context.Context, p *fwdPort) {
	runtime.LockOSThread() // the timer slack and priority belong to this thread
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	f.realtime()
	p.line.run(ctx, f.clk, func(frame []byte) {
		p.backlogBytes.Add(-int64(len(frame) - vnetHdrLen))
		f.forward(p, frame)
		f.freeFrame(frame)
	})
}

// forward counts frame as through the emulation and sends it (virtio-net
// header included) on where its destination lives, or floods it.
func (f *forwarder) forward(in *fwdPort, frame []byte) {
	in.forwarded.Add(1)
	in.forwardedBytes.Add(uint64(len(frame) - vnetHdrLen))
	out, flood := f.fdb.egress([6]byte(frame[vnetHdrLen:vnetHdrLen+6]), in.idx)
	for _, p := range f.ports {
		if p.idx == in.idx || !flood && p.idx != out {
			continue
		}
		if _, err := writeFrame(p.fd, frame); err != nil {
			in.sendErrors.Add(1)
		}
	}
}

// writeFrame sends frame (virtio-net header first) out of a port.
func writeFrame(fd int, frame []byte) (int, error) { return unix.Write(fd, frame) }

func (f *forwarder) copyFrame(frame []byte) []byte {
	if len(frame) > 2048 {
		return append([]byte(nil), frame...)
	}
	b := *f.bufs.Get().(*[]byte)
	return append(b[:0], frame...)
}

func (f *forwarder) freeFrame(b []byte) {
	if cap(b) == 2048 {
		f.bufs.Put(&b)
	}
}

// monoClock reads CLOCK_MONOTONIC in ns, through Go's monotonic clock
// (vDSO) anchored once to the raw clock, so sleepUntil can use
// clock_nanosleep with an absolute deadline on the same scale.
type monoClock struct {
	base int64
	t0   time.Time
}

func newMonoClock() monoClock {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return monoClock{base: ts.Nano(), t0: time.Now()}
}

func (c monoClock) now() int64 { return c.base + int64(time.Since(c.t0)) }

func (c monoClock) sleepUntil(t int64) {
	ts := unix.NsecToTimespec(t)
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
	}
}
