package impair

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"sync/atomic"
)

// NarrowHop is a narrow middle link: the switch passes no IP packet longer
// than MTU bytes, as a router in front of a smaller link would not. An
// IPv4 packet over it with DF set is dropped and, unless DropICMP, answered
// with ICMP "fragmentation needed" (type 3 code 4) carrying the MTU and
// quoting the packet's IP header and 8 bytes (RFC 1191); without DF it is
// fragmented. DropICMP is a PMTU black hole: the drop is silent, as where
// a middle box filters those ICMP messages. The zero value is no narrow
// hop.
type NarrowHop struct {
	MTU      int  `json:"mtu,omitempty"`
	DropICMP bool `json:"drop_icmp,omitempty"`
}

// The MTUs a narrow hop may have: IPv4's minimum, and below the role
// links' 1500 (a larger one narrows nothing).
const (
	MinNarrowMTU = 576
	MaxNarrowMTU = 1499
)

// DefaultNarrowMTU is the MTU `mtu` stands for without a number: IPv6's
// minimum link MTU, a common narrow path (tunnels in tunnels, some mobile
// carriers).
const DefaultNarrowMTU = 1280

// Validate checks h without touching anything.
func (h NarrowHop) Validate() error {
	switch {
	case h.MTU == 0 && h.DropICMP:
		return fmt.Errorf("icmp=drop needs a narrow hop (mtu=N)")
	case h.MTU != 0 && (h.MTU < MinNarrowMTU || h.MTU > MaxNarrowMTU):
		return fmt.Errorf("mtu %d: want %d to %d (the role links' MTU is 1500)", h.MTU, MinNarrowMTU, MaxNarrowMTU)
	}
	return nil
}

// label is the report's words: "MTU 1280", "MTU 1280, ICMP dropped".
func (h NarrowHop) label() string {
	s := "MTU " + strconv.Itoa(h.MTU)
	if h.DropICMP {
		s += ", ICMP dropped"
	}
	return s
}

// spec is --wan's form, ":mtu=1280:icmp=drop", "" without a narrow hop.
func (h NarrowHop) spec() string {
	if h.MTU == 0 {
		return ""
	}
	s := ":mtu=" + strconv.Itoa(h.MTU)
	if h.DropICMP {
		s += ":icmp=drop"
	}
	return s
}

// NarrowCounts are a port's frames at the narrow hop, cumulative.
type NarrowCounts struct {
	TooBig     uint64 `json:"too_big"`    // frames dropped over the MTU
	ICMPSent   uint64 `json:"icmp_sent"`  // "fragmentation needed" sent back
	Fragmented uint64 `json:"fragmented"` // packets passed on in fragments (no DF)
	// ICMPSuppressed counts the too-big drops a router would have answered
	// but the hop did not (icmp=drop): the black hole's silence, counted.
	ICMPSuppressed uint64 `json:"icmp_suppressed"`
	// MaxPassed is the longest IP packet passed on whole (a GSO frame
	// counts its segments' length), in bytes.
	MaxPassed uint64 `json:"max_passed"`
}

// Sub is what happened between prev and c; MaxPassed stays c's (a
// maximum since the forwarder started, not a count).
func (c NarrowCounts) Sub(prev NarrowCounts) NarrowCounts {
	return NarrowCounts{TooBig: sub(c.TooBig, prev.TooBig), ICMPSent: sub(c.ICMPSent, prev.ICMPSent),
		Fragmented: sub(c.Fragmented, prev.Fragmented), ICMPSuppressed: sub(c.ICMPSuppressed, prev.ICMPSuppressed),
		MaxPassed: c.MaxPassed}
}

// Add sums two ports' counts; MaxPassed is the larger.
func (c NarrowCounts) Add(o NarrowCounts) NarrowCounts {
	return NarrowCounts{TooBig: c.TooBig + o.TooBig, ICMPSent: c.ICMPSent + o.ICMPSent,
		Fragmented: c.Fragmented + o.Fragmented, ICMPSuppressed: c.ICMPSuppressed + o.ICMPSuppressed,
		MaxPassed: max(c.MaxPassed, o.MaxPassed)}
}

type narrowCounters struct {
	tooBig, icmpSent, fragmented, icmpSuppressed, maxPassed atomic.Uint64
}

func (c *narrowCounters) readNarrow() NarrowCounts {
	return NarrowCounts{TooBig: c.tooBig.Load(), ICMPSent: c.icmpSent.Load(),
		Fragmented: c.fragmented.Load(), ICMPSuppressed: c.icmpSuppressed.Load(), MaxPassed: c.maxPassed.Load()}
}

func (c *narrowCounters) passed(n int) {
	for {
		old := c.maxPassed.Load()
		if uint64(n) <= old || c.maxPassed.CompareAndSwap(old, uint64(n)) {
			return
		}
	}
}

// The frame layout the forwarder sees: a virtio-net header, Ethernet,
// then IP.
const (
	ipOff       = vnetHdrLen + ethHdrLen
	etherIPv4   = 0x0800
	etherIPv6   = 0x86dd
	vnetGSONone = 0
	vnetGSOUDP4 = 5 // VIRTIO_NET_HDR_GSO_UDP_L4
	vnetGSOUDP  = 3 // VIRTIO_NET_HDR_GSO_UDP (UFO)
	vnetNeedsCS = 1 // VIRTIO_NET_HDR_F_NEEDS_CSUM
)

// ipPacket is what the narrow hop reads of a frame.
type ipPacket struct {
	v4   bool
	wire int  // the longest IP packet the frame puts on the wire
	df   bool // IPv4's don't-fragment; always true for IPv6
	gso  bool
	ihl  int
}

// inspect reads frame's IP packet; ok is false for a frame that is not
// IP (ARP) or too short to tell, which the hop passes.
func inspect(frame []byte) (p ipPacket, ok bool) {
	if len(frame) < ipOff+20 {
		return p, false
	}
	et := binary.BigEndian.Uint16(frame[vnetHdrLen+12:])
	ip := frame[ipOff:]
	gsoType, gsoSize := frame[1], int(binary.LittleEndian.Uint16(frame[4:6]))
	p.gso = gsoType != vnetGSONone && gsoSize > 0
	var proto byte
	switch et {
	case etherIPv4:
		p.v4, p.ihl = true, int(ip[0]&0x0f)*4
		p.wire, p.df, proto = int(binary.BigEndian.Uint16(ip[2:4])), ip[6]&0x40 != 0, ip[9]
		if p.ihl < 20 || len(ip) < p.ihl {
			return p, false
		}
		if p.wire == 0 || p.wire > len(ip) { // a GSO frame's length may be unset
			p.wire = len(ip)
		}
	case etherIPv6:
		p.ihl, p.wire, p.df, proto = 40, 40+int(binary.BigEndian.Uint16(ip[4:6])), true, ip[6]
		if len(ip) < 40 {
			return p, false
		}
		if p.wire == 40 || p.wire > len(ip) {
			p.wire = len(ip)
		}
	default:
		return p, false
	}
	if p.gso {
		l4 := 8 // UDP
		if gsoType != vnetGSOUDP4 && gsoType != vnetGSOUDP && proto == 6 && len(ip) >= p.ihl+13 {
			l4 = int(ip[p.ihl+12]>>4) * 4 // TCP's data offset
		}
		p.wire = min(p.wire, p.ihl+l4+gsoSize)
	}
	return p, true
}

// narrow takes frame, received on in, through the narrow hop: it returns
// the frames to pass on (frame itself, or its fragments) and answers or
// counts what does not pass.
func (f *forwarder) narrow(in *fwdPort, frame []byte) [][]byte {
	p, ok := inspect(frame)
	if !ok || p.wire <= f.hop.MTU {
		if ok {
			in.passed(p.wire)
		}
		return [][]byte{frame}
	}
	if p.v4 && !p.df && !p.gso {
		frags := fragment(frame, p.ihl, f.hop.MTU)
		in.fragmented.Add(1)
		in.passed(f.hop.MTU)
		return frags
	}
	in.tooBig.Add(1)
	// Each drop is answered, unlimited: Linux exempts "fragmentation
	// needed" from its ICMP rate limits (icmpv4_mask_allow). The role
	// links carry IPv4 only, so IPv6 is dropped unanswered.
	switch {
	case p.v4 && p.df && f.hop.DropICMP:
		in.icmpSuppressed.Add(1)
	case p.v4 && p.df:
		if _, err := writeFrame(in.fd, fragNeeded(frame, p.ihl, f.hop.MTU)); err == nil {
			in.icmpSent.Add(1)
		}
	}
	return nil
}

// fragNeeded is the ICMP "fragmentation needed and DF set" a router sends
// back for frame: from the packet's destination (a flat L2 has no router
// address; Linux finds the socket by the quoted header, not the source),
// to its source, quoting its IP header and the first 8 bytes after it.
func fragNeeded(frame []byte, ihl, mtu int) []byte {
	orig := frame[ipOff:]
	quote := orig[:min(len(orig), ihl+8)]
	out := make([]byte, ipOff+20+8+len(quote))
	eth := out[vnetHdrLen:]
	copy(eth[0:6], frame[vnetHdrLen+6:vnetHdrLen+12]) // to the sender
	copy(eth[6:12], frame[vnetHdrLen:vnetHdrLen+6])   // from the destination
	binary.BigEndian.PutUint16(eth[12:], etherIPv4)
	ip := out[ipOff:]
	ip[0], ip[1] = 0x45, 0xc0 // IPv4, 20 bytes; DSCP CS6 as routers send
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	ip[8], ip[9] = 64, 1 // TTL, ICMP
	copy(ip[12:16], orig[16:20])
	copy(ip[16:20], orig[12:16])
	binary.BigEndian.PutUint16(ip[10:], checksum(ip[:20], 0))
	icmp := ip[20:]
	icmp[0], icmp[1] = 3, 4
	binary.BigEndian.PutUint16(icmp[6:], uint16(mtu))
	copy(icmp[8:], quote)
	binary.BigEndian.PutUint16(icmp[2:], checksum(icmp, 0))
	return out
}

// fragment splits frame's IPv4 packet (no DF, not GSO) into fragments of
// at most mtu bytes, each a frame with the original's Ethernet header. A
// checksum the sender left to the device is completed first: fragments
// cannot carry a partial one.
func fragment(frame []byte, ihl, mtu int) [][]byte {
	frame = completeChecksum(frame)
	hdr := frame[ipOff : ipOff+ihl]
	payload := frame[ipOff+ihl : ipOff+int(binary.BigEndian.Uint16(hdr[2:4]))]
	per := (mtu - ihl) &^ 7
	baseOff := int(binary.BigEndian.Uint16(hdr[6:8]) & 0x1fff)
	moreAfter := hdr[6]&0x20 != 0
	var out [][]byte
	for off := 0; off < len(payload); off += per {
		end := min(off+per, len(payload))
		fr := make([]byte, ipOff+ihl+end-off)
		copy(fr[vnetHdrLen:], frame[vnetHdrLen:ipOff]) // Ethernet; the virtio-net header stays zero
		ip := fr[ipOff:]
		copy(ip, hdr)
		copy(ip[ihl:], payload[off:end])
		binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
		fo := uint16(baseOff + off/8)
		if end < len(payload) || moreAfter {
			fo |= 0x2000
		}
		binary.BigEndian.PutUint16(ip[6:], fo)
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], checksum(ip[:ihl], 0))
		out = append(out, fr)
	}
	return out
}

// completeChecksum returns frame with the L4 checksum its sender left to
// the device (virtio-net NEEDS_CSUM) filled in, as the device would.
func completeChecksum(frame []byte) []byte {
	if frame[0]&vnetNeedsCS == 0 {
		return frame
	}
	start := vnetHdrLen + int(binary.LittleEndian.Uint16(frame[6:8]))
	at := start + int(binary.LittleEndian.Uint16(frame[8:10]))
	if at+2 > len(frame) {
		return frame
	}
	out := append([]byte(nil), frame...)
	out[0] &^= vnetNeedsCS
	cs := checksum(out[start:], 0) // the field holds the pseudo-header's sum
	if cs == 0 {
		cs = 0xffff
	}
	binary.BigEndian.PutUint16(out[at:], cs)
	return out
}

// checksum is the Internet checksum (RFC 1071) of b, starting from sum.
func checksum(b []byte, sum uint32) uint16 {
	for ; len(b) >= 2; b = b[2:] {
		sum += uint32(b[0])<<8 | uint32(b[1])
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}
