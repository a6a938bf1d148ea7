package metrics

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// TCP states (include/net/tcp_states.h) in which a server still holds a
// connection: it has not closed its side yet.
const (
	tcpEstablished = 0x01
	tcpSynRecv     = 0x03
	tcpCloseWait   = 0x08
	tcpListen      = 0x0a
)

// TCPSocket is one line of /proc/net/tcp{,6}: a socket of the namespace,
// listening, connected or closing (a closed socket whose data is still
// unacknowledged stays listed until it is).
type TCPSocket struct {
	LocalPort uint16
	State     uint8
	// SendQueued is the bytes written but not yet acknowledged by the
	// peer (tx_queue: write_seq − snd_una), unsent ones included.
	SendQueued uint32
	// Orphan: no process holds the socket any more (inode 0); the kernel
	// still delivers what was written before the close, or times out.
	Orphan bool
}

// Open reports whether the socket is a connection its local side has not
// closed yet (established, half-open, or closed by the peer only).
// Listeners and sockets in TIME_WAIT and the other closing states are not.
func (s TCPSocket) Open() bool {
	return s.State == tcpEstablished || s.State == tcpSynRecv || s.State == tcpCloseWait
}

// Listening reports whether any socket listens on port.
func Listening(socks []TCPSocket, port int) bool {
	for _, s := range socks {
		if s.State == tcpListen && int(s.LocalPort) == port {
			return true
		}
	}
	return false
}

// TCPState is a namespace's TCP: its sockets now, and a cumulative counter.
type TCPState struct {
	Sockets []TCPSocket
	// SynRetrans counts the SYNs and SYN-ACKs retransmitted (TcpExt
	// TCPSynRetrans): each is a handshake that waited for the initial
	// retransmission timeout (1 s, then doubling).
	SynRetrans uint64
}

// ReadTCPState reads the TCP state of the calling thread's network
// namespace.
func ReadTCPState() (TCPState, error) {
	socks, err := readTCPTable()
	if err != nil {
		return TCPState{}, err
	}
	f, err := os.Open("/proc/thread-self/net/netstat")
	if err != nil {
		return TCPState{}, fmt.Errorf("tcp counters: %w", err)
	}
	defer f.Close()
	ext, err := parseSNMPSection(f, "TcpExt:")
	if err != nil {
		return TCPState{}, fmt.Errorf("tcp counters: netstat: %w", err)
	}
	return TCPState{Sockets: socks, SynRetrans: ext["TCPSynRetrans"]}, nil
}

// readTCPTable lists the TCP sockets of the calling thread's network
// namespace, IPv4 and IPv6.
func readTCPTable() ([]TCPSocket, error) {
	var all []TCPSocket
	for _, file := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
		f, err := os.Open(file)
		if os.IsNotExist(err) {
			continue // no IPv6 in this kernel
		}
		if err != nil {
			return nil, fmt.Errorf("tcp table: %w", err)
		}
		socks, err := parseTCPTable(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("tcp table: %s: %w", file, err)
		}
		all = append(all, socks...)
	}
	return all, nil
}

// OpenConns counts the open connections (TCPSocket.Open) whose local port
// is port.
func OpenConns(table []TCPSocket, port int) int {
	n := 0
	for _, s := range table {
		if int(s.LocalPort) == port && s.Open() {
			n++
		}
	}
	return n
}

// SendQueued is the bytes the sockets of table that a process still holds
// have to deliver. Orphans are left out: a closed connection's tail shares
// the path's capacity with a new test for a moment but holds none of its
// data back, and one whose peer is gone (a killed daemon's) can retry for
// minutes.
func SendQueued(table []TCPSocket) int64 {
	var n int64
	for _, s := range table {
		if !s.Orphan {
			n += int64(s.SendQueued)
		}
	}
	return n
}

// parseTCPTable parses /proc/net/tcp{,6}: "sl local_address rem_address st
// tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …", addresses
// as HEX_IP:HEX_PORT, the state and the queues in hex.
func parseTCPTable(r io.Reader) ([]TCPSocket, error) {
	sc := bufio.NewScanner(r)
	var socks []TCPSocket
	for first := true; sc.Scan(); first = false {
		f := strings.Fields(sc.Text())
		if first || len(f) < 10 {
			continue // the header
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			return nil, fmt.Errorf("local address %q", f[1])
		}
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("local port %q: %w", hexPort, err)
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("state %q: %w", f[3], err)
		}
		hexTx, _, ok := strings.Cut(f[4], ":")
		if !ok {
			return nil, fmt.Errorf("queues %q", f[4])
		}
		tx, err := strconv.ParseUint(hexTx, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("tx_queue %q: %w", hexTx, err)
		}
		socks = append(socks, TCPSocket{LocalPort: uint16(p), State: uint8(st), SendQueued: uint32(tx), Orphan: f[9] == "0"})
	}
	return socks, sc.Err()
}
