package role

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// A role's counters, read where the role lives: each is a cumulative
// reading, and the caller subtracts.

// LinkCounters are a link's cumulative byte counters.
type LinkCounters struct{ Rx, Tx uint64 }

// MemoryPeak is a cgroup's memory.peak, OK when the kernel keeps one.
type MemoryPeak struct {
	KB int64
	OK bool
}

var (
	udpStatsOp = NewOp("role.udp-stats", func(context.Context, Nothing) (metrics.UDPStats, error) {
		return metrics.ReadUDPStats()
	})
	tcpStateOp = NewOp("role.tcp-state", func(context.Context, Nothing) (metrics.TCPState, error) {
		return metrics.ReadTCPState()
	})
	cgroupUsageOp = NewOp("role.cgroup-usage", func(ctx context.Context, path string) (uint64, error) {
		if err := checkCgroup(ctx, path); err != nil {
			return 0, err
		}
		return (&proc.Cgroup{Path: path}).UsageUsec()
	})
	cgroupPeakOp = NewOp("role.cgroup-memory-peak", func(ctx context.Context, path string) (MemoryPeak, error) {
		if err := checkCgroup(ctx, path); err != nil {
			return MemoryPeak{}, err
		}
		kb, ok := (&proc.Cgroup{Path: path}).MemoryPeakKB()
		return MemoryPeak{KB: kb, OK: ok}, nil
	})
	vmHWMOp = NewOp("role.vmhwm", func(_ context.Context, pid int) (int64, error) {
		return metrics.ReadVmHWM(pid)
	})
	cgroupPIDsOp = NewOp("role.cgroup-pids", func(ctx context.Context, path string) ([]int, error) {
		if err := checkCgroup(ctx, path); err != nil {
			return nil, err
		}
		return (&proc.Cgroup{Path: path}).PIDs()
	})
	linkBytesOp = NewOp("role.link-bytes", func(_ context.Context, name string) (LinkCounters, error) {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return LinkCounters{}, fmt.Errorf("link %s: %w", name, err)
		}
		st := l.Attrs().Statistics
		if st == nil {
			return LinkCounters{}, fmt.Errorf("link %s: no statistics", name)
		}
		return LinkCounters{Rx: st.RxBytes, Tx: st.TxBytes}, nil
	})
)

// Meter is a counter of role r as metrics.Sampler reads it: without a
// context, around each sample. A host lost meanwhile fails the read
// through the wire's keepalive (Wire.KeepAlive), not a deadline.
func Meter(r *Role, read func(context.Context, *Role) (uint64, error)) func() (uint64, error) {
	return func() (uint64, error) { return read(context.Background(), r) }
}

// CPUUsec is the CPU role r's whole cgroup has used (µs).
func CPUUsec(ctx context.Context, r *Role) (uint64, error) {
	return cgroupUsageOp.On(ctx, r, r.dir.Path)
}

// OwnCPUUsec is the CPU r's leaf has used (µs).
func OwnCPUUsec(ctx context.Context, r *Role) (uint64, error) {
	return cgroupUsageOp.On(ctx, r, r.at.leaf.Path)
}

// OwnMemoryPeakKB is r's leaf's memory.peak, where the kernel keeps it.
func OwnMemoryPeakKB(ctx context.Context, r *Role) (int64, bool) {
	p, err := cgroupPeakOp.On(ctx, r, r.at.leaf.Path)
	return p.KB, err == nil && p.OK
}

// PeakRSSKB is the peak resident memory (VmHWM) of pid, a process on role
// r's host.
func PeakRSSKB(ctx context.Context, r *Role, pid int) (int64, error) {
	return vmHWMOp.On(ctx, r, pid)
}

// PIDs are the processes in r's leaf.
func PIDs(ctx context.Context, r *Role) ([]int, error) {
	return cgroupPIDsOp.On(ctx, r, r.at.leaf.Path)
}

// RxBytes is the bytes role r's link to the network has received.
func RxBytes(ctx context.Context, r *Role) (uint64, error) {
	c, err := LinkBytes(ctx, r, topology.RoleLink)
	return c.Rx, err
}

// LinkBytes reads the byte counters of role r's link name.
func LinkBytes(ctx context.Context, r *Role, name string) (LinkCounters, error) {
	return linkBytesOp.On(ctx, r, name)
}

// UDPStats reads role r's UDP counters.
func UDPStats(ctx context.Context, r *Role) (metrics.UDPStats, error) {
	return udpStatsOp.On(ctx, r, Nothing{})
}

// TCP reads the TCP sockets and counters of role r's namespace.
func TCP(ctx context.Context, r *Role) (metrics.TCPState, error) {
	return tcpStateOp.On(ctx, r, Nothing{})
}
