package impair

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// PortStatus is one forwarder port's configuration and its counters.
type PortStatus struct {
	PortConfig
	PortCounts
	Narrow NarrowCounts `json:"narrow"`
}

// PortCounts count the frames received on one port (the role's egress),
// cumulative since the forwarder started.
// Received = Forwarded + LossDrops + QueueDrops + Backlog.
type PortCounts struct {
	Received       uint64 `json:"received"`
	ReceivedBytes  uint64 `json:"received_bytes"`
	Forwarded      uint64 `json:"forwarded"`
	ForwardedBytes uint64 `json:"forwarded_bytes"`
	LossDrops      uint64 `json:"loss_drops"`   // the emulated loss
	QueueDrops     uint64 `json:"queue_drops"`  // the delay line was full (limit)
	SocketDrops    uint64 `json:"socket_drops"` // the kernel dropped before the forwarder read (PACKET_STATISTICS)
	SendErrors     uint64 `json:"send_errors"`  // frames from this port that could not be sent on
	Backlog        int    `json:"backlog"`      // frames in the delay line now
	BacklogBytes   uint64 `json:"backlog_bytes"`
}

// fwdCounters are a port's counters as the forwarder's reader and
// releaser goroutines add to them, while the control socket reads them.
type fwdCounters struct {
	received, receivedBytes   atomic.Uint64
	forwarded, forwardedBytes atomic.Uint64
	lossDrops, queueDrops     atomic.Uint64
	sendErrors                atomic.Uint64
	backlogBytes              atomic.Int64

	statsMu     sync.Mutex // PACKET_STATISTICS resets on read: one reader at a time
	socketDrops uint64
}

// read returns the counts, with the kernel's drops on the port's socket fd
// (added up here, as the kernel resets them on each read) and backlog, the
// frames in the port's delay line now.
func (c *fwdCounters) read(fd, backlog int) PortCounts {
	pc := PortCounts{
		Received:       c.received.Load(),
		ReceivedBytes:  c.receivedBytes.Load(),
		Forwarded:      c.forwarded.Load(),
		ForwardedBytes: c.forwardedBytes.Load(),
		LossDrops:      c.lossDrops.Load(),
		QueueDrops:     c.queueDrops.Load(),
		SendErrors:     c.sendErrors.Load(),
		Backlog:        backlog,
		BacklogBytes:   uint64(max(c.backlogBytes.Load(), 0)),
	}
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
	if s, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
		c.socketDrops += uint64(s.Drops)
	}
	pc.SocketDrops = c.socketDrops
	return pc
}
