package metrics

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CPUSet is a set of logical CPUs: its size and the kernel's list form
// ("0-3,6").
type CPUSet struct {
	List  string
	Count int
}

// onlinePath is the kernel's list of the CPUs online: those /proc/stat
// sums over.
const onlinePath = "/sys/devices/system/cpu/online"

// OnlineCPUs reads the CPUs online.
func OnlineCPUs() (CPUSet, error) {
	b, err := os.ReadFile(onlinePath)
	if err != nil {
		return CPUSet{}, fmt.Errorf("online cpus: %w", err)
	}
	list := strings.TrimSpace(string(b))
	n, err := countCPUList(list)
	if err != nil {
		return CPUSet{}, fmt.Errorf("online cpus %q: %w", list, err)
	}
	return CPUSet{List: list, Count: n}, nil
}

// Affinity reads the CPUs this process may run on (sched_getaffinity):
// what the run's tools and daemons, which inherit it, can use.
func Affinity() (CPUSet, error) {
	cpus, err := AffinityCPUs()
	if err != nil {
		return CPUSet{}, err
	}
	return CPUSet{List: FormatCPUList(cpus), Count: len(cpus)}, nil
}

// AffinityCPUs are the CPUs this process may run on, in order.
func AffinityCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("cpu affinity: %w", err)
	}
	var cpus []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// onlineCount is the number of CPUs online, for shares of the host's
// capacity; runtime.NumCPU (this process's affinity) if the kernel's list
// cannot be read.
func onlineCount() int {
	if s, err := OnlineCPUs(); err == nil && s.Count > 0 {
		return s.Count
	}
	return runtime.NumCPU()
}

// countCPUList counts the CPUs of a kernel CPU list ("0-3,6,8-9").
func countCPUList(list string) (int, error) {
	if list == "" {
		return 0, nil
	}
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, err
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, err
			}
		}
		if b < a {
			return 0, fmt.Errorf("range %s runs backwards", part)
		}
		n += b - a + 1
	}
	return n, nil
}

// FormatCPUList writes sorted CPU numbers in the kernel's list form.
func FormatCPUList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i])+"-"+strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
