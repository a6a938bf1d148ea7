package recovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// A stream is a TCP connection through the tunnel that carries bytes
// beside the prober's requests, one connection for the whole probe,
// never dialled again: whether it carries bytes after a fault is whether
// the tunnel kept it (TCP retransmits across the gap, at its backoff's
// pace), where the prober's requests tell when the tunnel carries
// traffic at all.

// StreamChunk bytes are written every StreamEvery (1 MiB/s): steady
// enough to time a gap to a few hundredths of a second, light enough
// that the echo (64 bytes at a time) and the prober's requests on the
// same path are not starved. Writes block while the path is down, as a
// transfer's do, so the connection has bytes outstanding across a fault.
const (
	StreamChunk = 10 << 10
	StreamEvery = 10 * time.Millisecond
)

// StreamWindow bounds the stream's bytes written and not yet echoed: a
// tick is skipped at it. Without it, the tunnel's own buffers (an SSH
// channel's window, a TCP send buffer) fill with megabytes during a long
// fault, and the prober's first request after it waits behind them on a
// tunnel that carries both in one connection, delaying the recovery it
// times. 128 KiB keeps 1 MiB/s up to 125 ms of round trip.
const StreamWindow = 128 << 10

// StreamBin is the width of the slices the stream's bytes are counted
// in, for a chart: the prober's answered series' too.
const StreamBin = 100 * time.Millisecond

// GapMin is the shortest span without a byte the stream records: five
// writes' worth, above a loaded host's scheduling jitter.
const GapMin = 50 * time.Millisecond

// Stream is what the stream saw, on the prober's clock: the bytes echoed
// back, in all and per StreamBin from the prober's start (whole slices
// up to the watch's end), the first and last of them, every span of at
// least GapMin without one, when the watch ended, and, when the
// connection failed before it, why.
type Stream struct {
	Bytes int64         `json:"bytes"`
	Bins  []int64       `json:"bins"`
	First time.Duration `json:"first_ns"`
	Last  time.Duration `json:"last_ns"`
	Gaps  []Gap         `json:"gaps,omitempty"`
	End   time.Duration `json:"end_ns"`
	Err   string        `json:"error,omitempty"`
	ErrAt time.Duration `json:"error_ns,omitempty"`
}

// Gap is a span without a byte: From the last byte before it, To the
// first after it.
type Gap struct {
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
}

// StreamResult is the stream's figures for one fault.
type StreamResult struct {
	// Resumed: the connection carried bytes again after the fault's end,
	// within the bound.
	Resumed bool
	// GapSec is how long it carried none across the fault: the span
	// without a byte that the fault's end falls in (the longest one
	// within the fault when bytes crossed its end), or, with AtLeast,
	// from its last byte to the end of the watch (no byte came again).
	// 0 when no span of GapMin or more touched the fault.
	GapSec  float64
	AtLeast bool
}

// Across reads the stream's figures for fault f. A stream that carried
// no byte before the fault's start measured nothing: an error says why.
func (s Stream) Across(f Fault, bound time.Duration) (StreamResult, error) {
	switch {
	case s.Bytes == 0 && s.Err != "":
		return StreamResult{}, fmt.Errorf("it carried no byte: %s", s.Err)
	case s.Bytes == 0 || s.First >= f.Start:
		return StreamResult{}, errors.New("it carried no byte before the fault")
	case s.Err != "" && s.ErrAt < f.Start:
		return StreamResult{}, fmt.Errorf("its connection ended before the fault: %s", s.Err)
	}
	if s.Last < f.End {
		return StreamResult{GapSec: (s.End - s.Last).Seconds(), AtLeast: true}, nil
	}
	longest := time.Duration(0)
	for _, g := range s.Gaps {
		if g.From < f.End && f.End <= g.To {
			return StreamResult{Resumed: g.To-f.End <= bound, GapSec: (g.To - g.From).Seconds()}, nil
		}
		if g.From < f.End && g.To > f.Start {
			longest = max(longest, g.To-g.From)
		}
	}
	return StreamResult{Resumed: true, GapSec: longest.Seconds()}, nil
}

// streamer runs the stream: a writer paced at StreamEvery and a reader
// that logs what comes back.
type streamer struct {
	start time.Time
	mu    sync.Mutex
	log   Stream
	sent  int64 // bytes written, against log.Bytes echoed: StreamWindow
	done  bool  // the watch ended: errors after it are ours
	conn  net.Conn
	wg    sync.WaitGroup
}

// startStream dials the stream's connection and starts it; a failed dial
// is logged, not returned: the probe goes on without a stream.
func startStream(ctx context.Context, dial func(ctx context.Context) (net.Conn, error), start time.Time) *streamer {
	s := &streamer{start: start}
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	c, err := dial(dctx)
	cancel()
	if err != nil {
		s.log.Err = fmt.Sprintf("dial: %v", err)
		return s
	}
	s.conn = c
	s.wg.Add(2)
	go s.write()
	go s.read()
	return s
}

func (s *streamer) write() {
	defer s.wg.Done()
	tick := time.NewTicker(StreamEvery)
	defer tick.Stop()
	b := make([]byte, StreamChunk)
	for range tick.C {
		s.mu.Lock()
		done, full := s.done, s.sent-s.log.Bytes+StreamChunk > StreamWindow
		if !full {
			s.sent += StreamChunk
		}
		s.mu.Unlock()
		if done {
			return
		}
		if full {
			continue
		}
		if _, err := s.conn.Write(b); err != nil {
			s.fail("write", err)
			return
		}
	}
}

func (s *streamer) read() {
	defer s.wg.Done()
	b := make([]byte, 64<<10)
	for {
		n, err := s.conn.Read(b)
		if n > 0 {
			s.got(n)
		}
		if err != nil {
			s.fail("read", err)
			return
		}
	}
}

// got logs n bytes arriving now.
func (s *streamer) got(n int) {
	now := time.Since(s.start)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.log.Bytes == 0:
		s.log.First = now
	case now-s.log.Last >= GapMin:
		s.log.Gaps = append(s.log.Gaps, Gap{From: s.log.Last, To: now})
	}
	s.log.Bytes += int64(n)
	s.log.Last = now
	i := int(now / StreamBin)
	for len(s.log.Bins) <= i {
		s.log.Bins = append(s.log.Bins, 0)
	}
	s.log.Bins[i] += int64(n)
}

// fail logs the connection's end before the watch's, and closes it (the
// writer's or reader's partner then ends too).
func (s *streamer) fail(op string, err error) {
	s.mu.Lock()
	if !s.done && s.log.Err == "" {
		s.log.Err, s.log.ErrAt = fmt.Sprintf("%s: %v", op, err), time.Since(s.start)
	}
	s.mu.Unlock()
	s.conn.Close()
}

// settled reports whether the probe may end as far as the stream goes:
// there is none, it is over (never opened, or failed), or bytes are
// flowing now.
func (s *streamer) settled() bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn == nil || s.log.Err != "" || s.log.Bytes > 0 && time.Since(s.start)-s.log.Last < StallAfter
}

// stop ends the watch and returns the log (nil without a stream).
func (s *streamer) stop() *Stream {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.done = true
	s.log.End = time.Since(s.start)
	s.mu.Unlock()
	if s.conn != nil {
		s.conn.Close()
		s.wg.Wait() // the writer wakes at its next tick
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.log
	// Whole slices only, the quiet ones at the end included: a slice cut
	// by the watch's end would read as a slower one.
	whole := int(out.End / StreamBin)
	out.Bins = append(make([]int64, 0, whole), out.Bins[:min(whole, len(out.Bins))]...)
	for len(out.Bins) < whole {
		out.Bins = append(out.Bins, 0)
	}
	return &out
}
