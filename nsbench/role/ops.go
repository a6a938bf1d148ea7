package role

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"

	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// The ops every role offers: files, counters, sockets and the loopback
// addresses a tunnel's inner end needs.

type fileContent struct {
	Path string
	Data []byte
	Perm uint32
}

// LinkCounters are a link's cumulative byte counters.
type LinkCounters struct{ Rx, Tx uint64 }

// LoopbackAddr is an address on a role's lo, as a /32.
type LoopbackAddr struct {
	Addr   netip.Addr
	Remove bool // take it off again
}

// MemoryPeak is a cgroup's memory.peak, OK when the kernel keeps one.
type MemoryPeak struct {
	KB int64
	OK bool
}

var (
	readFileOp = NewOp("role.read-file", func(ctx context.Context, path string) ([]byte, error) {
		if err := CheckRead(ctx, path); err != nil {
			return nil, err
		}
		return os.ReadFile(path)
	})
	writeFileOp = NewOp("role.write-file", func(ctx context.Context, f fileContent) (Nothing, error) {
		if err := CheckPath(ctx, f.Path); err != nil {
			return Nothing{}, err
		}
		return Nothing{}, os.WriteFile(f.Path, f.Data, os.FileMode(f.Perm))
	})
	mkdirOp = NewOp("role.mkdir", func(ctx context.Context, f fileContent) (Nothing, error) {
		if err := CheckPath(ctx, f.Path); err != nil {
			return Nothing{}, err
		}
		return Nothing{}, os.MkdirAll(f.Path, os.FileMode(f.Perm))
	})
	dialOp = NewOp("role.dial-tcp", func(_ context.Context, addr string) (Nothing, error) {
		return Nothing{}, proc.DialTCP(addr)
	})
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
	newCgroupOp = NewOp("role.new-cgroup", func(ctx context.Context, path string) (Nothing, error) {
		if err := checkCgroup(ctx, path); err != nil {
			return Nothing{}, err
		}
		_, err := proc.NewCgroup(path)
		return Nothing{}, err
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
	loopbackOp = NewOp("role.loopback-addr", func(_ context.Context, a LoopbackAddr) (Nothing, error) {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return Nothing{}, err
		}
		addr := &netlink.Addr{IPNet: netipx(a.Addr)}
		if a.Remove {
			return Nothing{}, netlink.AddrDel(lo, addr)
		}
		return Nothing{}, netlink.AddrReplace(lo, addr)
	})
)

// AddLoopback puts a on the role's lo as a /32: an address that exists
// only behind a tunnel (its inner end, or what sshuttle captures).
func (r *Role) AddLoopback(ctx context.Context, a netip.Addr) error {
	_, err := loopbackOp.On(ctx, r, LoopbackAddr{Addr: a})
	return err
}

// RemoveLoopback takes a off the role's lo again.
func (r *Role) RemoveLoopback(ctx context.Context, a netip.Addr) error {
	_, err := loopbackOp.On(ctx, r, LoopbackAddr{Addr: a, Remove: true})
	return err
}

func netipx(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
}
