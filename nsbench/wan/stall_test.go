package wan

import (
	"slices"
	"testing"
)

// ssAfterStall is `ss -tniH` in the client's and the server's namespaces
// 12 s after Pure SSH's set-up under mtu=1280:icmp=drop was given up
// (captured here): the killed ssh's socket still retransmits its key
// exchange, beside iperf3's healthy connections (the server's listener
// shows IPv4-mapped addresses). The last line is written by hand: a
// backoff of 1.
const ssAfterStall = `ESTAB      0      0      10.77.0.2:33436 10.77.0.4:5201
	 cubic wscale:10,10 rto:204 rtt:0.104/0.078 ato:40 mss:1448 pmtu:1500 rcvmss:536 advmss:1448 cwnd:10 bytes_sent:179 bytes_acked:180 bytes_received:4 segs_out:7 segs_in:7 data_segs_out:3 data_segs_in:4 send 1113846154bps lastsnd:1628 lastrcv:1624 lastack:1624 pacing_rate 2214384704bps delivery_rate 373677416bps delivered:4 app_limited rcv_space:14480 rcv_ssthresh:64088 minrtt:0.031 snd_wnd:65536
FIN-WAIT-1 0      2593   10.77.0.2:35378 10.77.0.4:22  
	 cubic wscale:10,10 rto:6528 backoff:5 rtt:0.356/0.188 ato:40 mss:1448 pmtu:1500 rcvmss:1088 advmss:1448 cwnd:1 ssthresh:7 bytes_sent:9729 bytes_retrans:8304 bytes_acked:42 bytes_received:1129 segs_out:12 segs_in:4 data_segs_out:8 data_segs_in:2 send 32539326bps lastsnd:5836 lastrcv:12668 lastack:12668 pacing_rate 650558088bps delivery_rate 59102040bps delivered:2 app_limited busy:12708ms unacked:1 retrans:1/6 lost:1 rcv_rtt:41 rcv_space:14480 rcv_ssthresh:61440 notsent:1209 minrtt:0.196 snd_wnd:65536
ESTAB 0      0      [::ffff:10.77.0.4]:5201 [::ffff:10.77.0.2]:33448
	 cubic wscale:10,10 rto:204 rtt:0.382/0.576 ato:40 mss:1448 pmtu:1500 rcvmss:536 advmss:1448 cwnd:1571 ssthresh:282 bytes_sent:529401312 bytes_retrans:1504 bytes_acked:529399808 bytes_received:37 segs_out:367142 segs_in:8206 data_segs_out:367141 data_segs_in:1 send 47639958115bps lastsnd:4 lastrcv:1680 pacing_rate 57037301464bps delivery_rate 9114080bps delivered:367142 busy:1404ms retrans:0/2 dsack_dups:2 rcv_space:14480 rcv_ssthresh:64088 minrtt:0.003 snd_wnd:7486464
ESTAB 0      0      [::ffff:10.77.0.4]:5202 [::ffff:10.77.0.2]:33450
	 cubic wscale:10,10 rto:408 backoff:1 rtt:0.382/0.576 mss:1448 unacked:3
`

func TestBackedOff(t *testing.T) {
	got := backedOff(ssAfterStall)
	want := []tcpPorts{{local: "35378", peer: "22"}, {local: "5202", peer: "33450"}}
	if !slices.Equal(got, want) {
		t.Errorf("backedOff = %v, want %v (the two in backoff; none of the healthy ones)", got, want)
	}
	if got := backedOff(""); len(got) != 0 {
		t.Errorf("backedOff of nothing = %v", got)
	}
}
