package impair

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// The end-to-end loss count: a paced stream of numbered UDP datagrams from
// the client to the listener in the server's namespace (probe.go), which counts
// each one that arrives and echoes it; the client counts the echoes that
// come back. Both impaired directions are crossed, and the loss figure is
// what the datagrams themselves met, not what the impairment says it did.
//
// Every count is exact or the figure is not used. Markers sent over the
// namespace's loopback (never through the impairment) open and close the
// count at each receiver: a receiver's socket queue is FIFO, so when it
// reads the closing marker it has read every datagram that arrived before
// it, however late its goroutine ran, and the marker carries the socket's
// overflow count at that moment (SO_RXQ_OVFL). A datagram the path
// delivered but a probe socket dropped cannot be told from one the path
// lost: a probe with any such drop is not usable (EndToEnd.Unusable), and
// the verdict falls back to the impairment's own loss-drop counters.

// The loss probe's shape: LossProbeRate datagrams a second for
// LossProbeDuration, each way: 16 000 each way, 32 000 offered. At 0.1 %
// loss, 32 expected drops, measured within 0.059–0.169 % (the
// LossConfidenceZ interval of 32 of 32 000); at 1 %, 0.85–1.18 %. That
// tells 0.1 % from none (0 of 32 000: below 0.028 %) and from 0.3 %; a
// correct condition is flagged in 0.2–0.5 % of simulated cells
// (TestLossVerdictFalseAlarm).
//
// The rate is what a probe's receiving goroutine keeps up with on a busy
// 2-core host: at 10 000 a second beside three CPU hogs the listener's
// socket overflowed (1771 and 3687 of 30 000 dropped, with 8 MiB of
// buffer); at 5000 and below it dropped none. The forwarder itself
// dropped nothing but its loss draws at any of these rates.
const (
	LossProbeRate     = 4000
	LossProbeDuration = 4 * time.Second
	// lossProbeBits is a probe datagram's frame on the wire (16 bytes of
	// payload in UDP/IPv4/Ethernet, padded to the 64-byte minimum frame)
	// in bits, for the share of a rate cap the probe may take.
	lossProbeBits = 64 * 8
	// lossProbeCapShare is the share of a capped rate the probe may use,
	// so that its own datagrams never queue at the cap.
	lossProbeCapShare = 0.1
	// lossProbeSettle is the margin past a direction's longest emulated
	// delay for a datagram to reach its receiver's socket (the forwarder
	// runs SCHED_FIFO; the kernel's delivery is softirq work).
	lossProbeSettle = 100 * time.Millisecond
	// lossProbeBarrier bounds the wait for a receiver to read up to a
	// marker: its goroutine may be scheduled late on a busy host, but a
	// second behind means the count is not to be trusted.
	lossProbeBarrier = time.Second
)

// Markers: a datagram with the probe's id and one of these sequence
// numbers opens or closes a receiver's count.
const (
	markOpen  = math.MaxUint64 - 1
	markClose = math.MaxUint64
)

// LossConfidenceZ is the width, in standard deviations, of the interval the
// measured loss is given with (Wilson score interval): z = 3, a 99.7 %
// interval, so a correct impairment is flagged about 3 times in 1000.
const LossConfidenceZ = 3

// LossConfidence is LossConfidenceZ's two-sided coverage, as the report
// states it.
const LossConfidence = 0.9973

// LossProbe is how many datagrams the loss probe sends each way and how
// fast.
type LossProbe struct {
	Count int
	Rate  int // datagrams per second
}

// LossProbe is the loss probe for c: LossProbeRate for LossProbeDuration,
// slower under a rate cap (at most a tenth of the cap), so the duration
// stays bounded and fewer datagrams widen the interval instead.
func (c Condition) LossProbe() LossProbe {
	rate := LossProbeRate
	if c.RateBps > 0 {
		rate = max(1, min(rate, int(float64(c.RateBps)*lossProbeCapShare/lossProbeBits)))
	}
	return LossProbe{Count: max(1, int(float64(rate)*LossProbeDuration.Seconds())), Rate: rate}
}

// EndToEnd is what one loss probe counted.
type EndToEnd struct {
	Sent     uint64 // client → server datagrams the client's socket took
	Arrived  uint64 // of them, distinct ones the listener read
	Echoed   uint64 // echoes the listener's socket took (server → client)
	Returned uint64 // distinct echoes the client read
	// SendErrors are datagrams a socket refused (never on the path, so
	// not offered).
	SendErrors uint64
	// SocketDrops are datagrams the probe's own receiving sockets dropped
	// for want of buffer (SO_RXQ_OVFL) while the count was open: the path
	// delivered them, nobody counted them. They are not counted as
	// arrived; a probe with any is not usable.
	SocketDrops uint64
	// Unsettled says why a receiver's count could not be closed (its
	// goroutine did not read up to the marker in time); "" when both were.
	Unsettled string
}

// Offered is the datagrams put on the impaired path, both directions.
func (e EndToEnd) Offered() uint64 { return e.Sent + e.Echoed }

// Lost is the offered datagrams that were not read at the far end.
func (e EndToEnd) Lost() uint64 { return e.Sent - e.Arrived + e.Echoed - e.Returned }

// Unusable says why the count is not the path's loss ("" when it is):
// a receiver dropped datagrams itself, or its count was not closed.
func (e EndToEnd) Unusable() string {
	var why []string
	if e.SocketDrops > 0 {
		why = append(why, fmt.Sprintf("the probe's own sockets dropped %d datagrams the path delivered", e.SocketDrops))
	}
	if e.Unsettled != "" {
		why = append(why, e.Unsettled)
	}
	return strings.Join(why, "; ")
}

// LossPct is Lost / Offered in percent; 0 when nothing was offered.
func (e EndToEnd) LossPct() float64 {
	if e.Offered() == 0 {
		return 0
	}
	return 100 * float64(e.Lost()) / float64(e.Offered())
}

// LossInterval is the Wilson score interval of the loss rate, in percent,
// at LossConfidenceZ.
func (e EndToEnd) LossInterval() (lo, hi float64) {
	lo, hi = stats.Wilson(e.Lost(), e.Offered(), LossConfidenceZ)
	return 100 * lo, 100 * hi
}

// ProbeLoss sends lp's datagrams from the client to the listener, paced,
// and counts both ways: how many the listener read and echoed, and how
// many echoes the client read. rtt is the longest round trip the condition
// makes: each receiver's count closes half of it plus lossProbeSettle
// after the last datagram towards it was sent, so the probe takes its
// duration plus about rtt + 0.2 s, and at most rtt + 2.2 s more on a host
// that schedules its receivers late. One probe at a time.
func (p *Probe) ProbeLoss(ctx context.Context, lp LossProbe, rtt time.Duration) (EndToEnd, error) {
	if lp.Count <= 0 || lp.Rate <= 0 {
		return EndToEnd{}, fmt.Errorf("loss probe: %d datagrams at %d/s", lp.Count, lp.Rate)
	}
	if !p.mu.TryLock() {
		return EndToEnd{}, errors.New("loss probe: another probe is running on this listener")
	}
	defer p.mu.Unlock()
	id := rand.Uint64()

	// The listener's count opens at its marker: from then on its socket's
	// overflow count is this probe's.
	r, err := probeControlOp.On(ctx, p.server, probeRequest{Do: probeOpen, ID: id, Count: lp.Count})
	if err != nil {
		return EndToEnd{}, fmt.Errorf("loss probe: %w", err)
	}
	if !r.Read {
		return EndToEnd{Unsettled: "the listener did not read its opening marker within " + lossProbeBarrier.String()}, nil
	}

	// The stream, from the client's probe process.
	r, err = probeControlOp.On(ctx, p.client, probeRequest{Do: probeSend, ID: id, Count: lp.Count, Rate: lp.Rate, To: p.addr})
	if err != nil {
		return EndToEnd{}, fmt.Errorf("loss probe from %s to %s: %w", p.client.Name(), p.addr, err)
	}
	e := EndToEnd{Sent: r.Sent, SendErrors: r.SendErrors}

	var unsettled []string
	// The listener's count: every datagram still on the path has reached
	// its socket half a round trip and the settling margin after the last
	// was sent (the emulated delay is the bound, not a guess); then the
	// closing marker is queued behind them.
	if err := sleepCtx(ctx, rtt/2+lossProbeSettle); err != nil {
		return EndToEnd{}, err
	}
	r, err = probeControlOp.On(ctx, p.server, probeRequest{Do: probeClose, ID: id})
	if err != nil {
		return EndToEnd{}, fmt.Errorf("loss probe: %w", err)
	}
	if !r.Read {
		unsettled = append(unsettled, "the listener did not read up to its closing marker within "+lossProbeBarrier.String())
	}
	e.Arrived, e.Echoed, e.SocketDrops = r.Arrived, r.Echoed, r.SocketDrops

	// The client's count: the same for the echoes, the last of which the
	// listener sent before it read its closing marker.
	if err := sleepCtx(ctx, rtt/2+lossProbeSettle); err != nil {
		return EndToEnd{}, err
	}
	r, err = probeControlOp.On(ctx, p.client, probeRequest{Do: probeSettle, ID: id})
	if err != nil {
		return EndToEnd{}, fmt.Errorf("loss probe: %w", err)
	}
	if !r.Read {
		unsettled = append(unsettled, "the client did not read up to its closing marker within "+lossProbeBarrier.String())
	}
	e.Returned = r.Returned
	e.SocketDrops += r.SocketDrops
	e.Unsettled = strings.Join(unsettled, "; ")
	return e, nil
}

// echoCount is the client's count of the echoes, closed by its marker.
type echoCount struct {
	mu       sync.Mutex
	seen     []bool
	returned uint64
	drops    uint64
	done     bool
	closed   chan struct{}
}

// read counts the echoes of probe id until the closing marker or the
// socket's close.
func (c *echoCount) read(conn *net.UDPConn, id uint64) {
	buf, oob := make([]byte, 64), make([]byte, 64)
	for {
		k, oobn, _, _, err := conn.ReadMsgUDP(buf, oob)
		if err != nil {
			return // closed
		}
		if k != 16 || binary.BigEndian.Uint64(buf) != id {
			continue
		}
		seq := binary.BigEndian.Uint64(buf[8:])
		c.mu.Lock()
		switch {
		case c.done:
		case seq == markClose:
			c.drops, c.done = overflowCount(oob[:oobn]), true
			close(c.closed)
		case seq < uint64(len(c.seen)) && !c.seen[seq]:
			c.seen[seq] = true
			c.returned++
		}
		c.mu.Unlock()
	}
}

func (c *echoCount) result() (returned, drops uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	return c.returned, c.drops
}

// sendMarker sends a marker datagram on c, a socket connected to a
// receiver in its own namespace: it crosses the loopback, not the
// impairment.
func sendMarker(c *net.UDPConn, id, seq uint64) error {
	var m [16]byte
	binary.BigEndian.PutUint64(m[:], id)
	binary.BigEndian.PutUint64(m[8:], seq)
	_, err := c.Write(m[:])
	return err
}

// waitMarker waits until a receiver has read its marker (done is closed),
// at most lossProbeBarrier.
func waitMarker(ctx context.Context, done <-chan struct{}) error {
	t := time.NewTimer(lossProbeBarrier)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return errors.New("marker not read in time")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// probeSocketBuffer is the probe sockets' receive buffer: 4 MiB (the
// kernel doubles it) holds several thousand of the probe's datagrams (each
// takes its skb's size), over a second of the stream, so a receiver the
// host schedules late loses none.
const probeSocketBuffer = 4 << 20

// probeSocket sizes a probe socket's receive buffer past rmem_max
// (SO_RCVBUFFORCE: the run is root; no sysctl is changed) and asks the
// kernel to count what it still drops (SO_RXQ_OVFL).
func probeSocket(c *net.UDPConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, probeSocketBuffer); serr != nil {
			serr = fmt.Errorf("SO_RCVBUFFORCE: %w", serr)
			return
		}
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1); serr != nil {
			serr = fmt.Errorf("SO_RXQ_OVFL: %w", serr)
		}
	}); err != nil {
		return err
	}
	return serr
}

// overflowCount reads SO_RXQ_OVFL's count from a datagram's control
// messages: the socket's drops when the datagram was queued. The kernel
// adds the message only once the count is above zero, so none means 0.
func overflowCount(oob []byte) uint64 {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_RXQ_OVFL && len(m.Data) >= 4 {
			return uint64(binary.NativeEndian.Uint32(m.Data))
		}
	}
	return 0
}
