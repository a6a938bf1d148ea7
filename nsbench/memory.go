package nsbench

import (
	"context"

	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// memoryMeter reads the peak memory of each row's processes at the end of
// each of its paths, and records a row's peaks after its last block; the
// first row to finish also records the fixtures' baseline. It reads its
// roles without a context: a path closes, and its peaks are read, on every
// way out of a block, a cancelled run's too; a host lost meanwhile fails
// the read through the wire's keepalive.
type memoryMeter struct {
	rec      *recorder
	logf     Logf
	fixtures func() []transport.RSSProc
	baseline bool // the fixtures' peak memory is recorded
}

// samplePath keeps the peaks of rw's path while its processes still run.
func (m *memoryMeter) samplePath(rw *row) {
	for k, kb := range m.peakKB(rw.t.Name(), "", rw.path.Procs).PeakKB {
		if old, ok := rw.peaks[k]; !ok || kb > old {
			rw.peaks[k] = kb
		}
	}
}

// rowDone counts one of the row's blocks as done; after its last it
// records the row's peaks.
func (m *memoryMeter) rowDone(rw *row) {
	if rw.blocks--; rw.blocks == 0 {
		m.record(rw)
	}
}

// record adds a row's peaks. Each process's VmHWM and the cgroups'
// memory.peak are different measures and stay in fields of their own.
func (m *memoryMeter) record(rw *row) {
	t := rw.t
	if !m.baseline {
		m.baseline = true
		m.rec.rss(m.peakKB(t.Name(), "Baseline (all transports; idle listeners after the runs)", m.fixtures()))
	}
	rss := results.RSS{Transport: t.Name(), PeakKB: rw.peaks}
	// Where the kernel keeps memory.peak for the transport's cgroups, the
	// peak of all its processes together, forked children included. An
	// empty cgroup's 0 is no figure: a kernel tunnel's memory is in none.
	for name, r := range rw.view.Roles {
		if kb, ok := role.OwnMemoryPeakKB(context.Background(), r); ok && kb > 0 {
			if rss.CgroupPeakKB == nil {
				rss.CgroupPeakKB = map[string]int64{}
			}
			rss.CgroupPeakKB[name] = kb
		}
	}
	if entry, ok := m.rec.doc.TransportOf(t.Name()); len(rss.PeakKB) > 0 || len(rss.CgroupPeakKB) > 0 || ok && entry.InKernel != "" {
		m.rec.rss(rss)
	}
}

func (m *memoryMeter) peakKB(transport, label string, procs []transport.RSSProc) results.RSS {
	rss := results.RSS{Transport: transport, Label: label, PeakKB: map[string]int64{}}
	for _, p := range procs {
		read := metrics.ReadVmHWM // a process of this host
		if p.Role != nil {
			read = func(pid int) (int64, error) { return role.PeakRSSKB(context.Background(), p.Role, pid) }
		}
		kb, err := read(p.PID)
		if err != nil {
			m.logf("%s: peak RSS of %s: %v", transport, p.Key, err)
			continue
		}
		rss.PeakKB[p.Key] = kb
	}
	return rss
}
