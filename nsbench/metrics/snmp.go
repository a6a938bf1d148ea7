package metrics

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// UDPStats are a namespace's cumulative UDP counters (/proc/net/snmp).
type UDPStats struct {
	InDatagrams, InErrors, RcvbufErrors, SndbufErrors uint64
}

// ReadUDPStats reads the UDP counters of the calling thread's network
// namespace (/proc/thread-self/net is the thread's, not the process's).
func ReadUDPStats() (UDPStats, error) {
	f, err := os.Open("/proc/thread-self/net/snmp")
	if err != nil {
		return UDPStats{}, fmt.Errorf("udp counters: %w", err)
	}
	defer f.Close()
	st, err := parseSNMPUDP(f)
	if err != nil {
		return UDPStats{}, fmt.Errorf("udp counters: %w", err)
	}
	return st, nil
}

// parseSNMPUDP reads the "Udp:" header and value lines of /proc/net/snmp.
func parseSNMPUDP(r io.Reader) (UDPStats, error) {
	vals, err := parseSNMPSection(r, "Udp:")
	if err != nil {
		return UDPStats{}, err
	}
	return UDPStats{InDatagrams: vals["InDatagrams"], InErrors: vals["InErrors"],
		RcvbufErrors: vals["RcvbufErrors"], SndbufErrors: vals["SndbufErrors"]}, nil
}

// parseSNMPSection reads one section of /proc/net/snmp or netstat: a line
// of names after the prefix (e.g. "Udp:"), then one of their values.
func parseSNMPSection(r io.Reader, prefix string) (map[string]uint64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20) // TcpExt's lines run to kilobytes
	var header []string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != prefix {
			continue
		}
		if header == nil {
			header = f
			continue
		}
		if len(f) != len(header) {
			return nil, fmt.Errorf("%s %d values for %d names", prefix, len(f), len(header))
		}
		vals := map[string]uint64{}
		for i := 1; i < len(f); i++ {
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", prefix, header[i], err)
			}
			vals[header[i]] = v
		}
		return vals, nil
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("no %s lines", prefix)
}
