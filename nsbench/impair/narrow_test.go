package impair

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/topology"
	"golang.org/x/sys/unix"
)

// testFrame is a frame as the forwarder reads it: a virtio-net header,
// Ethernet and an IPv4 packet of total bytes carrying proto.
func testFrame(total int, df bool, proto byte) []byte {
	f := make([]byte, vnetHdrLen+ethHdrLen+total)
	copy(f[vnetHdrLen:], []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1}) // to …:02 from …:01
	binary.BigEndian.PutUint16(f[vnetHdrLen+12:], etherIPv4)
	ip := f[ipOff:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(total))
	binary.BigEndian.PutUint16(ip[4:], 0x1234)
	if df {
		ip[6] = 0x40
	}
	ip[8], ip[9] = 64, proto
	copy(ip[12:], []byte{10, 77, 0, 2, 10, 77, 0, 4})
	binary.BigEndian.PutUint16(ip[10:], checksum(ip[:20], 0))
	for i := 20; i < total; i++ {
		ip[i] = byte(i)
	}
	return f
}

func TestInspectWireSize(t *testing.T) {
	tcpGSO := testFrame(9000, true, 6)
	tcpGSO[1] = 1                                   // VIRTIO_NET_HDR_GSO_TCPV4
	binary.LittleEndian.PutUint16(tcpGSO[4:], 1448) // gso_size
	tcpGSO[ipOff+20+12] = 8 << 4                    // 32-byte TCP header
	udpGSO := testFrame(5000, true, 17)
	udpGSO[1] = vnetGSOUDP4
	binary.LittleEndian.PutUint16(udpGSO[4:], 1452)
	arp := testFrame(28, false, 0)
	binary.BigEndian.PutUint16(arp[vnetHdrLen+12:], 0x0806)
	for _, tc := range []struct {
		name  string
		frame []byte
		ok    bool
		wire  int
		df    bool
	}{
		{"plain", testFrame(1400, true, 6), true, 1400, true},
		{"no DF", testFrame(1400, false, 17), true, 1400, false},
		{"TCP GSO: the segments' size, not the frame's", tcpGSO, true, 20 + 32 + 1448, true},
		{"UDP GSO", udpGSO, true, 20 + 8 + 1452, true},
		{"ARP passes", arp, false, 0, false},
	} {
		p, ok := inspect(tc.frame)
		if ok != tc.ok || ok && (p.wire != tc.wire || p.df != tc.df) {
			t.Errorf("%s: got ok %v wire %d df %v, want %v %d %v", tc.name, ok, p.wire, p.df, tc.ok, tc.wire, tc.df)
		}
	}
}

func TestFragNeededFrame(t *testing.T) {
	orig := testFrame(1400, true, 6)
	icmp := fragNeeded(orig, 20, 1280)
	eth := icmp[vnetHdrLen:]
	if string(eth[0:6]) != string(orig[vnetHdrLen+6:vnetHdrLen+12]) || string(eth[6:12]) != string(orig[vnetHdrLen:vnetHdrLen+6]) {
		t.Errorf("Ethernet addresses not swapped: % x", eth[:12])
	}
	ip := icmp[ipOff:]
	if checksum(ip[:20], 0) != 0 {
		t.Error("IP header checksum does not verify")
	}
	if got := binary.BigEndian.Uint16(ip[2:]); int(got) != len(ip) || len(ip) != 20+8+28 {
		t.Errorf("IP total length %d, packet %d bytes, want 56 (header, ICMP, quoted header + 8)", got, len(ip))
	}
	if string(ip[12:16]) != "\x0a\x4d\x00\x04" || string(ip[16:20]) != "\x0a\x4d\x00\x02" {
		t.Errorf("addresses %v → %v, want from the destination 10.77.0.4 to the sender 10.77.0.2", ip[12:16], ip[16:20])
	}
	m := ip[20:]
	if m[0] != 3 || m[1] != 4 || binary.BigEndian.Uint16(m[6:]) != 1280 || checksum(m, 0) != 0 {
		t.Errorf("ICMP type %d code %d mtu %d checksum ok %v, want 3/4/1280/true", m[0], m[1], binary.BigEndian.Uint16(m[6:]), checksum(m, 0) == 0)
	}
	if string(m[8:]) != string(orig[ipOff:ipOff+28]) {
		t.Error("the quote is not the original IP header and 8 bytes")
	}
}

func TestFragmentReassembles(t *testing.T) {
	orig := testFrame(3000, false, 17)
	frags := fragment(orig, 20, 1280)
	if len(frags) != 3 {
		t.Fatalf("%d fragments of a 3000-byte packet at MTU 1280, want 3", len(frags))
	}
	var payload []byte
	for i, fr := range frags {
		ip := fr[ipOff:]
		n := int(binary.BigEndian.Uint16(ip[2:]))
		fo := binary.BigEndian.Uint16(ip[6:])
		if n > 1280 || n != len(ip) || checksum(ip[:20], 0) != 0 {
			t.Errorf("fragment %d: length %d (frame %d), header checksum ok %v", i, n, len(ip), checksum(ip[:20], 0) == 0)
		}
		if int(fo&0x1fff)*8 != len(payload) || (fo&0x2000 != 0) != (i < len(frags)-1) {
			t.Errorf("fragment %d: offset %d MF %v, want %d %v", i, int(fo&0x1fff)*8, fo&0x2000 != 0, len(payload), i < len(frags)-1)
		}
		payload = append(payload, ip[20:]...)
	}
	if string(payload) != string(orig[ipOff+20:]) {
		t.Error("the fragments' payloads do not make the original's")
	}
}

func TestNarrowHopSpec(t *testing.T) {
	c := Condition{Narrow: NarrowHop{MTU: 1280, DropICMP: true}}
	if got := c.String(); got != "0ms:0%:mtu=1280:icmp=drop" {
		t.Errorf("String %q", got)
	}
	if got := c.Label(); got != "WAN (0 ms RTT, no loss, MTU 1280, ICMP dropped)" {
		t.Errorf("Label %q", got)
	}
	for _, bad := range []NarrowHop{{MTU: 100}, {MTU: 1500}, {DropICMP: true}} {
		if err := (Condition{Narrow: bad}).Validate(); err == nil {
			t.Errorf("%+v: valid, want refused", bad)
		}
	}
}

// TestNarrowHopICMP sends a DF ping of 1400 bytes through the forwarder's
// narrow hop: with mtu=1280 the sender hears "Frag needed and DF set (mtu
// = 1280)" and its kernel takes the MTU for the route (a malformed ICMP
// would be dropped by it); with icmp=drop it hears nothing. A few seconds.
func TestNarrowHopICMP(t *testing.T) {
	bed := upProbe(t)
	u := newTestUserspace(t, bed.topo)
	client, server := bed.client, bed.roles[topology.Server]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ping := func() string {
		res, _ := client.Run(ctx, "ping", "-n", "-M", "do", "-s", "1372", "-c", "1", "-W", "1", server.Addr().String())
		return string(res.Stdout) + string(res.Stderr)
	}
	flush := func() {
		if _, err := client.Run(ctx, "ip", "route", "flush", "cache"); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		hop  NarrowHop
		want string
	}{
		{NarrowHop{MTU: 1280}, "Frag needed and DF set (mtu = 1280)"},
		{NarrowHop{MTU: 1280, DropICMP: true}, ""},
	} {
		flush()
		if _, err := u.Set(ctx, Condition{Narrow: tc.hop, Seed: 1}); err != nil {
			t.Fatal(err)
		}
		out := ping()
		n, err := u.Narrow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if tc.want != "" && !strings.Contains(out, tc.want) {
			t.Errorf("%+v: ping said %q, want %q", tc.hop, out, tc.want)
		}
		if tc.want == "" && (strings.Contains(out, "Frag needed") || !strings.Contains(out, "100% packet loss")) {
			t.Errorf("%+v: ping said %q, want no answer", tc.hop, out)
		}
		wantICMP := map[bool]uint64{true: 0, false: 1}[tc.hop.DropICMP]
		if n.TooBig != 1 || n.ICMPSent != wantICMP || n.ICMPSuppressed != 1-wantICMP {
			t.Errorf("%+v: counts %+v, want 1 too big, %d ICMP sent and %d suppressed", tc.hop, n, wantICMP, 1-wantICMP)
		}
		route, _ := client.Run(ctx, "ip", "route", "get", server.Addr().String())
		if learnt := strings.Contains(string(route.Stdout), "mtu 1280"); learnt == tc.hop.DropICMP {
			t.Errorf("%+v: the client's route %q: learnt MTU 1280 %v, want %v", tc.hop, route.Stdout, learnt, !tc.hop.DropICMP)
		}
	}
	flush()
}

// TestJudgeNarrow: known evidence, known verdict.
func TestJudgeNarrow(t *testing.T) {
	hop := NarrowHop{MTU: 1280}
	hole := NarrowHop{MTU: 1280, DropICMP: true}
	for _, tc := range []struct {
		name string
		e    NarrowEvidence
		want NarrowVerdict
	}{
		{"nothing ran", NarrowEvidence{Hop: hop}, NarrowVerdict{How: NarrowUnmeasured}},
		{"one stall of three, with drops at the hop during it, is a black hole, whatever got through",
			NarrowEvidence{Hop: hop, Completed: 2, Stalled: 1, Failed: NarrowCounts{TooBig: 5, ICMPSent: 5}, FailedRecorded: 1,
				Counts: NarrowCounts{TooBig: 3, ICMPSent: 3}}, NarrowVerdict{How: NarrowStall}},
		{"the ICMP was dropped and it stalled", NarrowEvidence{Hop: hole, Stalled: 2, FailedRecorded: 2,
			Failed: NarrowCounts{TooBig: 40, ICMPSuppressed: 40}}, NarrowVerdict{How: NarrowStall}},
		{"a failed sample during which the hop dropped nothing and sent no ICMP: not the hop",
			NarrowEvidence{Hop: hop, Completed: 2, Stalled: 1, FailedRecorded: 1, Counts: NarrowCounts{TooBig: 3, ICMPSent: 3}},
			NarrowVerdict{How: NarrowNotHop}},
		{"a failed set-up the hop dropped nothing of, ICMP dropped: not the hop",
			NarrowEvidence{Hop: hole, Stalled: 1, FailedRecorded: 1}, NarrowVerdict{How: NarrowNotHop}},
		{"one failure without drops and one without counts: not recorded, not a black hole",
			NarrowEvidence{Hop: hop, Stalled: 2, FailedRecorded: 1}, NarrowVerdict{How: NarrowNotRecorded}},
		{"failures without counts (an older document's): not recorded",
			NarrowEvidence{Hop: hop, Completed: 1, Stalled: 1, Counts: NarrowCounts{TooBig: 9}}, NarrowVerdict{How: NarrowNotRecorded}},
		{"too big, told, went on", NarrowEvidence{Hop: hop, Completed: 2, Counts: NarrowCounts{TooBig: 4, ICMPSent: 4, MaxPassed: 1280}},
			NarrowVerdict{Survives: true, How: NarrowPMTUD}},
		{"never too big: own MTU fits", NarrowEvidence{Hop: hole, Completed: 2, Counts: NarrowCounts{MaxPassed: 1240}},
			NarrowVerdict{Survives: true, How: NarrowFits}},
		{"fragmented", NarrowEvidence{Hop: hole, Completed: 1, Counts: NarrowCounts{Fragmented: 900, MaxPassed: 1280}},
			NarrowVerdict{Survives: true, How: NarrowFragmentation}},
		{"too big, not told, went on anyway", NarrowEvidence{Hop: hole, Completed: 2, Counts: NarrowCounts{TooBig: 7}},
			NarrowVerdict{Survives: true, How: NarrowNoICMP}},
		{"fragmented, at 0.5 % of its LAN rate: collapsed", NarrowEvidence{Hop: hop, Completed: 1, Counts: NarrowCounts{Fragmented: 176}, RateRatio: 0.005},
			NarrowVerdict{Survives: true, How: NarrowFragmentation, Collapsed: true}},
		{"told by ICMP, at half its LAN rate", NarrowEvidence{Hop: hop, Completed: 1, Counts: NarrowCounts{TooBig: 2, ICMPSent: 2}, RateRatio: 0.5},
			NarrowVerdict{Survives: true, How: NarrowPMTUD}},
		{"no LAN rate to compare with", NarrowEvidence{Hop: hop, Completed: 1, Counts: NarrowCounts{TooBig: 2, ICMPSent: 2}},
			NarrowVerdict{Survives: true, How: NarrowPMTUD}},
		{"a stall is a black hole, not a collapse", NarrowEvidence{Hop: hop, Completed: 1, Stalled: 1, RateRatio: 0.001,
			Failed: NarrowCounts{TooBig: 1}, FailedRecorded: 1}, NarrowVerdict{How: NarrowStall}},
		{"a failure not the hop's is not a collapse", NarrowEvidence{Hop: hop, Completed: 1, Stalled: 1, RateRatio: 0.001,
			FailedRecorded: 1}, NarrowVerdict{How: NarrowNotHop}},
	} {
		got := JudgeNarrow(tc.e)
		if got != tc.want || got.BlackHole() != (tc.want.How == NarrowStall) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// A rate through the hop is compared with the lower of the LAN's and the
// condition's cap: 20 Mbit/s under a 20 Mbit/s cap is not a collapse
// however fast the LAN; with no cap, or a cap above the LAN, the LAN.
func TestRateReference(t *testing.T) {
	for _, tc := range []struct {
		lan, limit, ref float64
		cap, ok         bool
	}{
		{2, 0.02, 0.02, true, true},
		{2, 0, 2, false, true},
		{2, 10, 2, false, true},
		{0, 0.02, 0.02, true, true},
		{0, 0, 0, false, false},
	} {
		ref, cap, ok := RateReference(tc.lan, tc.limit)
		if ref != tc.ref || cap != tc.cap || ok != tc.ok {
			t.Errorf("LAN %g, cap %g: %g %v %v, want %g %v %v", tc.lan, tc.limit, ref, cap, ok, tc.ref, tc.cap, tc.ok)
		}
	}
}

// The hop answers every DF packet it drops, as Linux does: its ICMP rate
// limits (icmp_ratelimit, 1 s per destination with a burst of 6, and
// icmp_msgs_per_sec) exempt "fragmentation needed" (net/ipv4/icmp.c,
// icmpv4_mask_allow: "Don't limit PMTU discovery"). A per-destination
// token bucket would have sent 6 of these 20.
func TestNarrowHopICMPOnePerDrop(t *testing.T) {
	for _, tc := range []struct {
		name               string
		hop                NarrowHop
		df                 bool
		wantICMP, passed   int
		tooBig, suppressed uint64
	}{
		{"DF, ICMP answered", NarrowHop{MTU: 1280}, true, 20, 0, 20, 0},
		{"DF, ICMP dropped", NarrowHop{MTU: 1280, DropICMP: true}, true, 0, 0, 20, 20},
		{"no DF: fragmented, no ICMP", NarrowHop{MTU: 1280}, false, 0, 2 * 20, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			f := &forwarder{hop: tc.hop}
			in := &fwdPort{fd: fds[0]}
			icmp, passed := 0, 0
			buf := make([]byte, 2048)
			for range 20 {
				passed += len(f.narrow(in, testFrame(1400, tc.df, 6)))
				for {
					n, _, err := unix.Recvfrom(fds[1], buf, unix.MSG_DONTWAIT)
					if err != nil {
						break
					}
					if m := buf[ipOff+20 : n]; m[0] == 3 && m[1] == 4 {
						icmp++
					}
				}
			}
			got := in.readNarrow()
			if icmp != tc.wantICMP || passed != tc.passed || got.TooBig != tc.tooBig || got.ICMPSent != uint64(tc.wantICMP) ||
				got.ICMPSuppressed != tc.suppressed {
				t.Errorf("20 packets of 1400 B: %d ICMP read, %d frames passed, counts %+v; want %d ICMP, %d passed, %d too big, %d ICMP suppressed",
					icmp, passed, got, tc.wantICMP, tc.passed, tc.tooBig, tc.suppressed)
			}
		})
	}
}
