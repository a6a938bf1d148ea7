package impair

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// The end-to-end loss count: a paced stream of numbered UDP datagrams from
// the client to the ProbeListener in the server's namespace, which counts
// each one that arrives and echoes it; the client counts the echoes that
// come back. Both impaired directions are crossed, and the loss figure is
// what the datagrams themselves met, not what the impairment says it did.

// The loss probe's shape: LossProbeRate datagrams a second for
// LossProbeDuration, each way. 30 000 datagrams each way, 60 000 offered:
// at 0.1 % loss, 60 expected drops, measured to about ±40 % (the
// LossConfidenceZ interval); at 1 %, to about ±12 %.
const (
	LossProbeRate     = 10_000
	LossProbeDuration = 3 * time.Second
	// lossProbeBits is a probe datagram's frame on the wire (16 bytes of
	// payload in UDP/IPv4/Ethernet, padded to the 64-byte minimum frame)
	// in bits, for the share of a rate cap the probe may take.
	lossProbeBits = 64 * 8
	// lossProbeCapShare is the share of a capped rate the probe may use,
	// so that its own datagrams never queue at the cap.
	lossProbeCapShare = 0.1
	// lossProbeDrain is how long past the round trip the client waits for
	// the last echoes: the bound on a datagram still on its way.
	lossProbeDrain = time.Second
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
	Arrived  uint64 // of them, distinct ones that reached the listener
	Echoed   uint64 // echoes the listener's socket took (server → client)
	Returned uint64 // distinct echoes that reached the client
	// SendErrors are datagrams a socket refused (never on the path, so
	// not offered).
	SendErrors uint64
	// SocketDrops are datagrams the path delivered but the probe's own
	// receiving sockets dropped for want of buffer (SO_RXQ_OVFL): they
	// count as arrived, since the path did not lose them.
	SocketDrops uint64
}

// Offered is the datagrams put on the impaired path, both directions.
func (e EndToEnd) Offered() uint64 { return e.Sent + e.Echoed }

// Lost is the offered datagrams that never arrived.
func (e EndToEnd) Lost() uint64 { return e.Sent - e.Arrived + e.Echoed - e.Returned }

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
	lo, hi = Wilson(e.Lost(), e.Offered(), LossConfidenceZ)
	return 100 * lo, 100 * hi
}

// Wilson is the Wilson score interval of a binomial proportion k/n at z
// standard deviations; (0, 1) when n is 0.
func Wilson(k, n uint64, z float64) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	nf := float64(n)
	p := float64(k) / nf
	z2 := z * z
	mid := (p + z2/(2*nf)) / (1 + z2/nf)
	half := z / (1 + z2/nf) * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return max(0, mid-half), min(1, mid+half)
}

// lossStream is the listener's count of one probe's datagrams.
type lossStream struct {
	id      uint64
	seen    []bool
	arrived uint64
	echoed  uint64
}

// serveUDP counts and echoes the loss probe's datagrams until the socket
// closes. A datagram is 16 bytes: the probe's id, then its sequence
// number; one of another probe (a late one of the last) is dropped.
func (p *ProbeListener) serveUDP() {
	buf, oob := make([]byte, 64), make([]byte, 64)
	for {
		n, oobn, _, from, err := p.udp.ReadMsgUDP(buf, oob)
		if err != nil {
			return // closed
		}
		if d, ok := overflowCount(oob[:oobn]); ok {
			p.mu.Lock()
			p.drops = d
			p.mu.Unlock()
		}
		if n != 16 {
			continue
		}
		id, seq := binary.BigEndian.Uint64(buf), binary.BigEndian.Uint64(buf[8:])
		p.mu.Lock()
		s := p.stream
		if s == nil || s.id != id || seq >= uint64(len(s.seen)) || s.seen[seq] {
			p.mu.Unlock()
			continue
		}
		s.seen[seq] = true
		s.arrived++
		p.mu.Unlock()
		if _, err := p.udp.WriteTo(buf[:n], from); err == nil {
			p.mu.Lock()
			s.echoed++
			p.mu.Unlock()
		}
	}
}

// ProbeLoss sends lp's datagrams from inside client to the listener,
// paced, and counts both ways: how many the listener received and
// echoed, and how many echoes came back. It waits for the last echo at
// most rtt + lossProbeDrain after the last send (rtt: the longest round
// trip the condition makes), so it ends within the probe's duration plus
// that. One probe at a time per listener.
func (p *ProbeListener) ProbeLoss(ctx context.Context, client *ns.NS, lp LossProbe, rtt time.Duration) (EndToEnd, error) {
	if lp.Count <= 0 || lp.Rate <= 0 {
		return EndToEnd{}, fmt.Errorf("loss probe: %d datagrams at %d/s", lp.Count, lp.Rate)
	}
	s := &lossStream{id: rand.Uint64(), seen: make([]bool, lp.Count)}
	p.mu.Lock()
	if p.stream != nil {
		p.mu.Unlock()
		return EndToEnd{}, errors.New("loss probe: another probe is running on this listener")
	}
	p.stream = s
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.stream = nil
		p.mu.Unlock()
	}()

	var conn *net.UDPConn
	addr := p.udp.LocalAddr().(*net.UDPAddr)
	if err := client.Do(func() (err error) {
		conn, err = net.DialUDP("udp", nil, addr)
		return err
	}); err != nil {
		return EndToEnd{}, fmt.Errorf("loss probe from %s to %s: %w", client.Name, addr, err)
	}
	defer conn.Close()
	if err := probeSocket(conn); err != nil {
		return EndToEnd{}, fmt.Errorf("loss probe from %s: %w", client.Name, err)
	}
	p.mu.Lock()
	drops0 := p.drops
	p.mu.Unlock()

	var e EndToEnd
	type count struct{ returned, drops uint64 }
	returned := make(chan count, 1)
	all := make(chan struct{})
	go func() { // counts the echoes until the socket closes
		seen := make([]bool, lp.Count)
		var n, drops uint64
		buf, oob := make([]byte, 64), make([]byte, 64)
		for {
			k, oobn, _, _, err := conn.ReadMsgUDP(buf, oob)
			if err != nil {
				if errors.Is(err, syscall.ECONNREFUSED) {
					continue // an ICMP error for an earlier datagram
				}
				returned <- count{n, drops} // closed
				return
			}
			if d, ok := overflowCount(oob[:oobn]); ok {
				drops = d
			}
			if k != 16 || binary.BigEndian.Uint64(buf) != s.id {
				continue
			}
			seq := binary.BigEndian.Uint64(buf[8:])
			if seq >= uint64(lp.Count) || seen[seq] {
				continue
			}
			seen[seq] = true
			n++
			if n == uint64(lp.Count) {
				close(all)
			}
		}
	}()

	// Pacing: by each tick, as many datagrams as the rate allows since the
	// start, so a late tick catches up instead of slowing the probe.
	msg := make([]byte, 16)
	binary.BigEndian.PutUint64(msg, s.id)
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	next := 0
	for next < lp.Count {
		due := min(lp.Count, 1+int(time.Since(start).Seconds()*float64(lp.Rate)))
		for ; next < due; next++ {
			binary.BigEndian.PutUint64(msg[8:], uint64(next))
			if _, err := conn.Write(msg); err != nil {
				e.SendErrors++
				continue
			}
			e.Sent++
		}
		if next == lp.Count {
			break
		}
		select {
		case <-ctx.Done():
			return EndToEnd{}, ctx.Err()
		case <-tick.C: // pacing the stream, not waiting for a condition
		}
	}

	// The wait for the last echoes: until every one is back, or the bound.
	drain := time.NewTimer(rtt + lossProbeDrain)
	defer drain.Stop()
	select {
	case <-all:
	case <-drain.C:
	case <-ctx.Done():
		return EndToEnd{}, ctx.Err()
	}
	conn.Close()
	got := <-returned
	p.mu.Lock()
	e.Arrived, e.Echoed = s.arrived, s.echoed
	serverDrops := p.drops - drops0
	p.mu.Unlock()
	// A datagram a socket dropped never reached the count, nor (at the
	// listener) was echoed; the path delivered it. Each counts as arrived,
	// and one dropped at the listener as not offered back.
	e.SocketDrops = got.drops + serverDrops
	e.Arrived = min(e.Sent, e.Arrived+serverDrops)
	e.Returned = min(e.Echoed, got.returned+got.drops)
	return e, nil
}

// probeSocketBuffer is the probe sockets' receive buffer: 4 MiB holds
// about 5000 of the probe's datagrams (each takes its skb's size), half a
// second of the stream, so a receiver the host schedules late loses none.
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

// overflowCount reads SO_RXQ_OVFL's cumulative drop count from a
// datagram's control messages.
func overflowCount(oob []byte) (uint64, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_RXQ_OVFL && len(m.Data) >= 4 {
			return uint64(binary.NativeEndian.Uint32(m.Data)), true
		}
	}
	return 0, false
}
