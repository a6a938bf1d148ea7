package metrics

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// EventSources is where the kernel lists its perf event sources (PMUs).
const EventSources = "/sys/bus/event_source/devices"

// HardwareCounters is what a probe of the host's perf event sources found:
// whether a CPU PMU counts instructions and cycles, which would make a
// tunnel's cost countable in instructions, a figure other work on the host
// does not move (CPU time does).
type HardwareCounters struct {
	// PMU names the CPU's event source that counts both ("cpu",
	// "cpu_core", "armv8_pmuv3_0"); "" when none does.
	PMU string
	// Why says, when PMU is "", why the counters are not available.
	Why string
}

// Available reports whether the host counts instructions and cycles.
func (h HardwareCounters) Available() bool { return h.PMU != "" }

// String is the Environment's sentence about the counters.
func (h HardwareCounters) String() string {
	if h.Available() {
		return "available (PMU " + h.PMU + ": instructions, cycles)"
	}
	return "not available on this host: " + h.Why
}

// pmuEvents are the names a CPU PMU gives its instruction and cycle events
// in its events directory: x86's, then Arm's.
var pmuEvents = [][2]string{{"instructions", "cpu-cycles"}, {"inst_retired", "cpu_cycles"}}

// ProbeHardwareCounters looks through dir (EventSources, or a copy of
// its shape in a test) for a PMU whose events include instructions and
// cycles. It reads only names: a VM without a virtual PMU has none, and
// lists only its software, tracepoint, breakpoint and similar sources.
func ProbeHardwareCounters(dir string) HardwareCounters {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return HardwareCounters{Why: dir + " does not exist (no perf events in this kernel)"}
		}
		return HardwareCounters{Why: fmt.Sprintf("reading %s: %v", dir, err)}
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	for _, n := range names {
		for _, ev := range pmuEvents {
			if exists(filepath.Join(dir, n, "events", ev[0])) && exists(filepath.Join(dir, n, "events", ev[1])) {
				return HardwareCounters{PMU: n}
			}
		}
	}
	if len(names) == 0 {
		return HardwareCounters{Why: dir + " lists no event source"}
	}
	return HardwareCounters{Why: dir + " has no CPU PMU counting instructions and cycles (only " + strings.Join(names, ", ") +
		"): a virtual machine without a virtual PMU"}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
