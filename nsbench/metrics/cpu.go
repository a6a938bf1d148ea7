package metrics

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// UserHZ is the unit of the tick counts in /proc/stat: 100 per second.
//
// It is a constant on Linux because it is part of the user-space ABI, not
// the kernel's internal tick rate: whatever CONFIG_HZ (250, 1000, ...) a
// kernel is built with, it converts to USER_HZ (jiffies_64_to_clock_t)
// before writing /proc/stat. USER_HZ is 100 on every architecture this
// harness runs on (x86, arm64; only alpha and the removed ia64 used 1024).
// sysconf(_SC_CLK_TCK) would need cgo to ask; the test checks AT_CLKTCK in
// the auxiliary vector instead.
const UserHZ = 100

// CPUTimes is the aggregate "cpu" line of /proc/stat, in USER_HZ ticks
// summed over all CPUs since boot. guest and guest_nice are not kept: the
// kernel already counts them inside User and Nice.
type CPUTimes struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

// BusyTicks is the time the CPUs spent doing anything but idling or waiting
// for I/O: user + nice + system + irq + softirq. Kernel WireGuard's crypto
// (kworkers, softirq) is in here and in no process or cgroup. Steal is
// not: it is time a hypervisor ran other guests on this guest's CPUs, no
// work of this host, and is read apart (Steal).
func (t CPUTimes) BusyTicks() uint64 {
	return t.User + t.Nice + t.System + t.IRQ + t.SoftIRQ
}

// Plus is t and u together: the CPU of two hosts, counted as one.
func (t CPUTimes) Plus(u CPUTimes) CPUTimes {
	return CPUTimes{User: t.User + u.User, Nice: t.Nice + u.Nice, System: t.System + u.System, Idle: t.Idle + u.Idle,
		IOWait: t.IOWait + u.IOWait, IRQ: t.IRQ + u.IRQ, SoftIRQ: t.SoftIRQ + u.SoftIRQ, Steal: t.Steal + u.Steal}
}

// TicksToSec converts USER_HZ ticks to seconds.
func TicksToSec(t uint64) float64 {
	return float64(t) / UserHZ
}

// ReadHostCPU reads the aggregate CPU times of the host.
func ReadHostCPU() (CPUTimes, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return CPUTimes{}, fmt.Errorf("read /proc/stat: %w", err)
	}
	defer f.Close()
	t, err := parseProcStat(f)
	if err != nil {
		return CPUTimes{}, fmt.Errorf("read /proc/stat: %w", err)
	}
	return t, nil
}

// parseProcStat finds the aggregate "cpu" line (not "cpu0", ...). Kernels
// since 2.6.11 print at least the eight fields kept; fewer is an error.
func parseProcStat(r io.Reader) (CPUTimes, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024) // the intr line is long
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 9 {
			return CPUTimes{}, fmt.Errorf("cpu line has %d fields, want at least 8", len(f)-1)
		}
		var v [8]uint64
		for i := range v {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return CPUTimes{}, fmt.Errorf("parse cpu field %d: %w", i+1, err)
			}
			v[i] = n
		}
		return CPUTimes{
			User: v[0], Nice: v[1], System: v[2], Idle: v[3],
			IOWait: v[4], IRQ: v[5], SoftIRQ: v[6], Steal: v[7],
		}, nil
	}
	if err := sc.Err(); err != nil {
		return CPUTimes{}, err
	}
	return CPUTimes{}, errors.New("no aggregate cpu line")
}
