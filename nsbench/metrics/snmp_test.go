package metrics

import (
	"strings"
	"testing"
)

func TestParseSNMPUDP(t *testing.T) {
	in := "Ip: Forwarding DefaultTTL\nIp: 1 64\n" +
		"Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n" +
		"Udp: 135665 2 665 40 660 5 0 0 0\n" +
		"UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n" +
		"UdpLite: 0 0 0 0 0 0 0 0 0\n"
	got, err := parseSNMPUDP(strings.NewReader(in))
	want := UDPStats{InDatagrams: 135665, InErrors: 665, RcvbufErrors: 660, SndbufErrors: 5}
	if err != nil || got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"", "Udp: A B\nUdp: 1\n", "Udp: A\nUdp: x\n"} {
		if _, err := parseSNMPUDP(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestParseNetstatTcpExt(t *testing.T) {
	in := "TcpExt: SyncookiesSent TCPSynRetrans TCPOrigDataSent\n" +
		"TcpExt: 0 7 123\n" +
		"IpExt: InNoRoutes TCPSynRetrans\n" +
		"IpExt: 0 99\n"
	got, err := parseSNMPSection(strings.NewReader(in), "TcpExt:")
	if err != nil || got["TCPSynRetrans"] != 7 || got["TCPOrigDataSent"] != 123 {
		t.Fatalf("got %v, %v; want TCPSynRetrans 7 from TcpExt, not IpExt's 99", got, err)
	}
	if _, err := parseSNMPSection(strings.NewReader(in), "MPTcpExt:"); err == nil {
		t.Error("a missing section: want an error")
	}
}
