package topology

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// A role's address must be free on its network: a role holding the
// host's own address, the gateway's or another machine's answers ARP for
// it and cuts them off (the host's own SSH session first). Before the
// role's link takes its address, it asks the network, as RFC 5227's
// duplicate-address detection does: ARP probes from sender address
// 0.0.0.0, so that nobody's ARP cache learns anything, and any answer
// means the address is in use. (The child cannot hear its parent, so the
// host's own addresses are refused before, from the parent's list.)

// The schedule has RFC 5227's shape (three probes, then a wait) at the
// speed of a local link, as NetworkManager's ACD library (n-acd) has it:
// the RFC's 4–9 s would hold up every run, while round trips on wired and
// wireless LANs are a few ms, and n-acd suggests a whole probe of 50–100
// ms as a default for modern networks. Ours listens 100 ms after each of
// three probes, 300 ms in all, so one lost probe or a slow answer does not
// go unseen.
const (
	arpProbes    = 3                      // probes sent
	arpProbeWait = 100 * time.Millisecond // for answers after each
)

// AddrInUseError says that someone on the network answered for the
// address.
type AddrInUseError struct {
	Addr netip.Addr
	By   net.HardwareAddr
}

func (e *AddrInUseError) Error() string {
	return fmt.Sprintf("addr %s is in use on the network (%s answers ARP for it): give the role a free address", e.Addr, e.By)
}

// probeAddr sends ARP probes for a on the role's link, up and without an
// address, in namespace n, and returns an *AddrInUseError when anyone
// answers.
func probeAddr(n *ns.NS, ifindex int, mac net.HardwareAddr, a netip.Addr) error {
	return n.Do(func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ARP)))
		if err != nil {
			return fmt.Errorf("probe %s: packet socket: %w", a, err)
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ARP), Ifindex: ifindex}); err != nil {
			return fmt.Errorf("probe %s: bind %s: %w", a, RoleLink, err)
		}
		broadcast := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ARP), Ifindex: ifindex, Halen: 6,
			Addr: [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
		probe := arpPacket(arpRequest, mac, netip.IPv4Unspecified(), a)
		buf := make([]byte, 128)
		for range arpProbes {
			if err := unix.Sendto(fd, probe, 0, broadcast); err != nil {
				return fmt.Errorf("probe %s: send on %s: %w", a, RoleLink, err)
			}
			for deadline := time.Now().Add(arpProbeWait); time.Until(deadline) > 0; {
				tv := unix.NsecToTimeval(time.Until(deadline).Nanoseconds())
				if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
					return fmt.Errorf("probe %s: %w", a, err)
				}
				n, _, err := unix.Recvfrom(fd, buf, 0)
				if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
					continue
				}
				if err != nil {
					return fmt.Errorf("probe %s: receive on %s: %w", a, RoleLink, err)
				}
				if by, ok := claims(buf[:n], a, mac); ok {
					return &AddrInUseError{Addr: a, By: by}
				}
			}
		}
		return nil
	})
}

const (
	arpRequest = 1
	arpReply   = 2
)

// arpPacket is an Ethernet/IPv4 ARP packet (the payload after the
// Ethernet header).
func arpPacket(op uint16, sha net.HardwareAddr, spa, tpa netip.Addr) []byte {
	p := make([]byte, 28)
	binary.BigEndian.PutUint16(p[0:], 1)      // Ethernet
	binary.BigEndian.PutUint16(p[2:], 0x0800) // IPv4
	p[4], p[5] = 6, 4
	binary.BigEndian.PutUint16(p[6:], op)
	copy(p[8:14], sha)
	s, t := spa.As4(), tpa.As4()
	copy(p[14:18], s[:])
	copy(p[24:28], t[:])
	return p
}

// claims reports whether ARP packet p, not sent by mac, says a is its
// sender's: an answer to the probe, or any ARP from a holder of a.
func claims(p []byte, a netip.Addr, mac net.HardwareAddr) (net.HardwareAddr, bool) {
	if len(p) < 28 || binary.BigEndian.Uint16(p[2:]) != 0x0800 || p[4] != 6 || p[5] != 4 {
		return nil, false
	}
	sha := net.HardwareAddr(append([]byte(nil), p[8:14]...))
	spa := netip.AddrFrom4([4]byte(p[14:18]))
	op := binary.BigEndian.Uint16(p[6:])
	if (op != arpReply && op != arpRequest) || spa != a || sha.String() == mac.String() {
		return nil, false
	}
	return sha, true
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
