package instrument

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// iperf3Result is what a TCP `iperf3 -c HOST -p PORT [-R] -t T -P N -J` run
// reports (client side).
type iperf3Result struct {
	// ReceivedBitsPerSec is end.sum_received.bits_per_second: the benchmark's
	// value (divide by 1e9 for Gbit/s).
	ReceivedBitsPerSec float64
	// SentBitsPerSec is end.sum_sent.bits_per_second.
	SentBitsPerSec float64
	// ReceivedBytes and SentBytes are end.sum_received.bytes and
	// end.sum_sent.bytes.
	ReceivedBytes int64
	SentBytes     int64
	// Retransmits is end.sum_sent.retransmits, counted by the sending side
	// (the server with -R; iperf3 carries it over the control connection).
	// HasRetransmits is false when iperf3 left the field out (a sender that
	// cannot read TCP_INFO).
	Retransmits    int64
	HasRetransmits bool
	// SenderCongestion and ReceiverCongestion are end.sender_tcp_congestion
	// and end.receiver_tcp_congestion ("" when absent). With -R the sender
	// is the server.
	SenderCongestion   string
	ReceiverCongestion string
	// DurationSec is end.sum_received.seconds, the receiver's measured
	// interval; TestDurationSec is the requested -t (start.test_start.duration).
	DurationSec     float64
	TestDurationSec float64
	// Streams is start.test_start.num_streams (-P); Reverse is -R.
	Streams int
	Reverse bool
	// Intervals are the per-interval sums (-i, 1 s by default), the
	// client's side: received bits/s with -R, sent without.
	Intervals []iperf3Interval
}

// iperf3Interval is one reporting interval of a run: its end in seconds
// from the test's start and the bits/s in it (the sum over the streams).
type iperf3Interval struct {
	End           float64
	BitsPerSecond float64
	Omitted       bool
}

// iperf3BidirResult is what a TCP `iperf3 -c HOST -p PORT --bidir -P N -J`
// run reports (client side): N streams each way at once.
type iperf3BidirResult struct {
	// Down is server → client: end.sum_received_bidir_reverse (counted by
	// the client, its receiver). Up is client → server: end.sum_received
	// (counted by the server, its receiver, and passed back).
	DownBitsPerSec, UpBitsPerSec float64
	DownBytes, UpBytes           int64
	// DownRetransmits and UpRetransmits are the senders' counts
	// (end.sum_sent_bidir_reverse and end.sum_sent retransmits); Has… is
	// false when iperf3 left them out.
	DownRetransmits, UpRetransmits int64
	HasRetransmits                 bool
	// DurationSec is the down direction's receiver interval
	// (end.sum_received_bidir_reverse.seconds).
	DurationSec float64
	Streams     int
	// Down and Up intervals as the client saw them: intervals[].
	// sum_bidir_reverse (received) and intervals[].sum (sent).
	Down, Up []iperf3Interval
}

// iperf3UDPResult is what `iperf3 -c HOST -u -l 200 -b 0 [-R] -J` reports
// (client side).
//
// iperf3 3.12 puts the same figures in several places; the fields below come
// from end.sum_sent (the sender's own counts) and end.sum_received (the
// receiver's), which mean the same thing with and without -R. (end.sum mixes
// the two: its packets, bytes and bits_per_second are the sender's, its
// lost_packets and jitter_ms the receiver's.)
type iperf3UDPResult struct {
	// PacketsSent is end.sum_sent.packets: datagrams the sender wrote.
	PacketsSent int64
	// ReceiverPackets is end.sum_received.packets: the highest sequence
	// number the receiver saw, i.e. received + gaps. Datagrams sent after
	// the last one that arrived are in neither (see Unreceived).
	ReceiverPackets int64
	// Lost is end.sum_received.lost_packets: sequence gaps counted by the
	// receiver (iperf3's own loss figure).
	Lost int64
	// LostPercent is end.sum.lost_percent, iperf3's figure:
	// Lost / PacketsSent * 100.
	LostPercent float64
	// PacketsReceived = ReceiverPackets - Lost: datagrams that arrived
	// (equals end.sum_received.bytes / the datagram size).
	PacketsReceived int64
	// Unreceived = PacketsSent - PacketsReceived: every datagram that did
	// not arrive, including the tail iperf3 does not count as lost.
	Unreceived int64
	// ReceivedPPS = PacketsReceived / DurationSec.
	ReceivedPPS float64
	// JitterMs is end.sum_received.jitter_ms (mean over streams).
	JitterMs float64
	// DurationSec is end.sum_received.seconds (the receiver's interval;
	// start.test_start.duration when that is zero).
	DurationSec float64
	// ReceivedBitsPerSec and SentBitsPerSec are end.sum_received and
	// end.sum_sent bits_per_second.
	ReceivedBitsPerSec float64
	SentBitsPerSec     float64
	// BlockSize is start.test_start.blksize (-l); Reverse is -R.
	BlockSize int
	Reverse   bool
}

type iperf3JSONSum struct {
	Seconds       float64  `json:"seconds"`
	Bytes         int64    `json:"bytes"`
	BitsPerSecond float64  `json:"bits_per_second"`
	Retransmits   *int64   `json:"retransmits"`
	JitterMs      *float64 `json:"jitter_ms"`
	LostPackets   *int64   `json:"lost_packets"`
	Packets       *int64   `json:"packets"`
	LostPercent   *float64 `json:"lost_percent"`
}

type iperf3JSONInterval struct {
	End           float64 `json:"end"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Omitted       bool    `json:"omitted"`
}

type iperf3JSON struct {
	Start struct {
		TestStart struct {
			Protocol   string  `json:"protocol"`
			NumStreams int     `json:"num_streams"`
			BlkSize    int     `json:"blksize"`
			Duration   float64 `json:"duration"`
			Reverse    int     `json:"reverse"`
		} `json:"test_start"`
	} `json:"start"`
	Intervals []struct {
		Sum             *iperf3JSONInterval `json:"sum"`
		SumBidirReverse *iperf3JSONInterval `json:"sum_bidir_reverse"`
	} `json:"intervals"`
	End struct {
		Sum                     *iperf3JSONSum `json:"sum"`
		SumSent                 *iperf3JSONSum `json:"sum_sent"`
		SumReceived             *iperf3JSONSum `json:"sum_received"`
		SumSentBidirReverse     *iperf3JSONSum `json:"sum_sent_bidir_reverse"`
		SumReceivedBidirReverse *iperf3JSONSum `json:"sum_received_bidir_reverse"`
		SenderTCPCongestion     string         `json:"sender_tcp_congestion"`
		ReceiverTCPCongestion   string         `json:"receiver_tcp_congestion"`
	} `json:"end"`
	Error string `json:"error"`
}

// decodeIperf3 decodes iperf3 -J output and turns a non-empty "error" field
// into an error. iperf3 3.12 exits 0 when it fails with -J (connection
// refused, server busy), so this field is the only sign of failure.
func decodeIperf3(out []byte) (*iperf3JSON, error) {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) == 0 {
		return nil, errors.New("iperf3: empty output")
	}
	var doc iperf3JSON
	if err := json.Unmarshal(trimmed, &doc); err != nil {
		return nil, fmt.Errorf("iperf3: output is not valid JSON (%v, %d bytes), %s", err, len(out), parseDescribe(out))
	}
	if doc.Error != "" {
		return nil, fmt.Errorf("iperf3: error - %s", doc.Error)
	}
	if doc.End.SumReceived == nil {
		return nil, errors.New("iperf3: JSON has no end.sum_received (test did not finish)")
	}
	if doc.End.SumSent == nil {
		return nil, errors.New("iperf3: JSON has no end.sum_sent (test did not finish)")
	}
	return &doc, nil
}

// parseIperf3 reads the -J output of a TCP iperf3 client.
func parseIperf3(out []byte) (iperf3Result, error) {
	doc, err := decodeIperf3(out)
	if err != nil {
		return iperf3Result{}, err
	}
	ts := doc.Start.TestStart
	if ts.Protocol != "" && ts.Protocol != "TCP" {
		return iperf3Result{}, fmt.Errorf("iperf3: expected a TCP test, got protocol %q", ts.Protocol)
	}
	recv, sent := doc.End.SumReceived, doc.End.SumSent
	r := iperf3Result{
		ReceivedBitsPerSec: recv.BitsPerSecond,
		SentBitsPerSec:     sent.BitsPerSecond,
		ReceivedBytes:      recv.Bytes,
		SentBytes:          sent.Bytes,
		SenderCongestion:   doc.End.SenderTCPCongestion,
		ReceiverCongestion: doc.End.ReceiverTCPCongestion,
		DurationSec:        recv.Seconds,
		TestDurationSec:    ts.Duration,
		Streams:            ts.NumStreams,
		Reverse:            ts.Reverse != 0,
	}
	if sent.Retransmits != nil {
		r.Retransmits, r.HasRetransmits = *sent.Retransmits, true
	}
	if r.ReceivedBitsPerSec < 0 || r.SentBitsPerSec < 0 {
		return iperf3Result{}, fmt.Errorf("iperf3: negative bits_per_second (received %g, sent %g)", r.ReceivedBitsPerSec, r.SentBitsPerSec)
	}
	for _, iv := range doc.Intervals {
		if iv.Sum != nil {
			r.Intervals = append(r.Intervals, iperf3Interval(*iv.Sum))
		}
	}
	return r, nil
}

// parseIperf3Bidir reads the -J output of a TCP iperf3 client run with
// --bidir.
func parseIperf3Bidir(out []byte) (iperf3BidirResult, error) {
	doc, err := decodeIperf3(out)
	if err != nil {
		return iperf3BidirResult{}, err
	}
	ts := doc.Start.TestStart
	if ts.Protocol != "" && ts.Protocol != "TCP" {
		return iperf3BidirResult{}, fmt.Errorf("iperf3: expected a TCP test, got protocol %q", ts.Protocol)
	}
	e := doc.End
	if e.SumReceivedBidirReverse == nil || e.SumSentBidirReverse == nil {
		return iperf3BidirResult{}, errors.New("iperf3: JSON has no end.sum_received_bidir_reverse (not a --bidir test)")
	}
	r := iperf3BidirResult{
		DownBitsPerSec: e.SumReceivedBidirReverse.BitsPerSecond,
		UpBitsPerSec:   e.SumReceived.BitsPerSecond,
		DownBytes:      e.SumReceivedBidirReverse.Bytes,
		UpBytes:        e.SumReceived.Bytes,
		DurationSec:    e.SumReceivedBidirReverse.Seconds,
		Streams:        ts.NumStreams,
	}
	if e.SumSent.Retransmits != nil && e.SumSentBidirReverse.Retransmits != nil {
		r.UpRetransmits, r.DownRetransmits = *e.SumSent.Retransmits, *e.SumSentBidirReverse.Retransmits
		r.HasRetransmits = true
	}
	if r.DownBitsPerSec < 0 || r.UpBitsPerSec < 0 {
		return iperf3BidirResult{}, fmt.Errorf("iperf3: negative bits_per_second (down %g, up %g)", r.DownBitsPerSec, r.UpBitsPerSec)
	}
	for _, iv := range doc.Intervals {
		if iv.Sum == nil || iv.SumBidirReverse == nil {
			return iperf3BidirResult{}, errors.New("iperf3: a --bidir interval lacks sum or sum_bidir_reverse")
		}
		r.Up = append(r.Up, iperf3Interval(*iv.Sum))
		r.Down = append(r.Down, iperf3Interval(*iv.SumBidirReverse))
	}
	return r, nil
}

// parseIperf3UDP reads the -J output of a UDP iperf3 client (-u), with or
// without -R.
func parseIperf3UDP(out []byte) (iperf3UDPResult, error) {
	doc, err := decodeIperf3(out)
	if err != nil {
		return iperf3UDPResult{}, err
	}
	ts := doc.Start.TestStart
	if ts.Protocol != "UDP" {
		return iperf3UDPResult{}, fmt.Errorf("iperf3: expected a UDP test, got protocol %q", ts.Protocol)
	}
	recv, sent := doc.End.SumReceived, doc.End.SumSent
	if sent.Packets == nil || recv.Packets == nil || recv.LostPackets == nil {
		return iperf3UDPResult{}, errors.New("iperf3: UDP JSON lacks packets/lost_packets in end.sum_sent or end.sum_received")
	}
	r := iperf3UDPResult{
		PacketsSent:        *sent.Packets,
		ReceiverPackets:    *recv.Packets,
		Lost:               *recv.LostPackets,
		DurationSec:        recv.Seconds,
		ReceivedBitsPerSec: recv.BitsPerSecond,
		SentBitsPerSec:     sent.BitsPerSecond,
		BlockSize:          ts.BlkSize,
		Reverse:            ts.Reverse != 0,
	}
	if recv.JitterMs != nil {
		r.JitterMs = *recv.JitterMs
	}
	switch {
	case doc.End.Sum != nil && doc.End.Sum.LostPercent != nil:
		r.LostPercent = *doc.End.Sum.LostPercent
	case r.PacketsSent > 0:
		r.LostPercent = 100 * float64(r.Lost) / float64(r.PacketsSent)
	}
	r.PacketsReceived = r.ReceiverPackets - r.Lost
	if r.PacketsReceived < 0 || r.Lost < 0 || r.PacketsSent < 0 {
		return iperf3UDPResult{}, fmt.Errorf("iperf3: inconsistent UDP counts (sent %d, receiver packets %d, lost %d)", r.PacketsSent, r.ReceiverPackets, r.Lost)
	}
	r.Unreceived = r.PacketsSent - r.PacketsReceived
	if r.DurationSec <= 0 {
		r.DurationSec = ts.Duration
	}
	if r.DurationSec > 0 {
		r.ReceivedPPS = float64(r.PacketsReceived) / r.DurationSec
	}
	return r, nil
}

// IPerf3Received is the rate (bit/s) a TCP iperf3 client's -J output says
// its receiver got: a client's share in the many-client sweep
// (nsbench/fanout), parsed as the iperf3 instruments parse it.
func IPerf3Received(out []byte) (float64, error) {
	r, err := parseIperf3(out)
	return r.ReceivedBitsPerSec, err
}

// IPerf3Interval is one reporting interval of a TCP iperf3 client: its
// start and end in seconds from the client's test start, and the bytes
// the client counted in it (received, with -R).
type IPerf3Interval struct {
	Start, End float64
	Bytes      int64
}

// IPerf3ReceivedIntervals are a TCP iperf3 client's -R -J reporting
// intervals (intervals[].sum, omitted ones left out), the output checked
// as IPerf3Received checks it: the many-client sweep reads each client
// over the window all of them shared, not over its own.
func IPerf3ReceivedIntervals(out []byte) ([]IPerf3Interval, error) {
	if _, err := parseIperf3(out); err != nil {
		return nil, err
	}
	var doc struct {
		Intervals []struct {
			Sum *struct {
				Start   float64 `json:"start"`
				End     float64 `json:"end"`
				Bytes   int64   `json:"bytes"`
				Omitted bool    `json:"omitted"`
			} `json:"sum"`
		} `json:"intervals"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &doc); err != nil {
		return nil, fmt.Errorf("iperf3: intervals: %w", err)
	}
	var ivs []IPerf3Interval
	for _, iv := range doc.Intervals {
		if iv.Sum == nil || iv.Sum.Omitted {
			continue
		}
		if !(iv.Sum.End > iv.Sum.Start) || iv.Sum.Start < 0 || iv.Sum.Bytes < 0 {
			return nil, fmt.Errorf("iperf3: interval %g–%g s with %d bytes is not an interval", iv.Sum.Start, iv.Sum.End, iv.Sum.Bytes)
		}
		ivs = append(ivs, IPerf3Interval{Start: iv.Sum.Start, End: iv.Sum.End, Bytes: iv.Sum.Bytes})
	}
	if len(ivs) == 0 {
		return nil, errors.New("iperf3: no reporting intervals (run with -i)")
	}
	return ivs, nil
}
