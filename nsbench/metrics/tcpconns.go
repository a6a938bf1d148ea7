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
)

// OpenTCPConns counts the TCP connections in the calling thread's network
// namespace whose local port is port and that the server side has not
// closed yet (established, half-open, or closed by the peer only).
// Listeners and sockets in TIME_WAIT and the other closing states do not
// count.
func OpenTCPConns(port int) (int, error) {
	count := 0
	for _, file := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
		f, err := os.Open(file)
		if os.IsNotExist(err) {
			continue // no IPv6 in this kernel
		}
		if err != nil {
			return 0, fmt.Errorf("tcp connections: %w", err)
		}
		c, err := countOpenConns(f, port)
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("tcp connections: %s: %w", file, err)
		}
		count += c
	}
	return count, nil
}

// countOpenConns parses /proc/net/tcp{,6}: "sl local_address rem_address st
// …", addresses as HEX_IP:HEX_PORT, the state in hex.
func countOpenConns(r io.Reader, port int) (int, error) {
	sc := bufio.NewScanner(r)
	n := 0
	for first := true; sc.Scan(); first = false {
		f := strings.Fields(sc.Text())
		if first || len(f) < 4 {
			continue // the header
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			return 0, fmt.Errorf("local address %q", f[1])
		}
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil {
			return 0, fmt.Errorf("local port %q: %w", hexPort, err)
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			return 0, fmt.Errorf("state %q: %w", f[3], err)
		}
		if int(p) == port && (st == tcpEstablished || st == tcpSynRecv || st == tcpCloseWait) {
			n++
		}
	}
	return n, sc.Err()
}
