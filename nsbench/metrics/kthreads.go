package metrics

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// pfKthread is PF_KTHREAD in /proc/PID/stat's flags field.
const pfKthread = 0x00200000

// KthreadTicks sums utime+stime (USER_HZ ticks) of the kernel threads in
// /proc. Threads that vanish between listing and reading are skipped.
func KthreadTicks() (uint64, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return 0, fmt.Errorf("kernel threads: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("kernel threads: %w", err)
	}
	var total uint64
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue
		}
		if ticks, kthread := parseKthreadStat(b); kthread {
			total += ticks
		}
	}
	return total, nil
}

// parseKthreadStat reads flags (field 9), utime and stime (14, 15) of a
// /proc/PID/stat line; the command name may hold spaces and parentheses,
// so fields count from the last ')'.
func parseKthreadStat(b []byte) (ticks uint64, kthread bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): field k is f[k-3].
	if len(f) < 13 {
		return 0, false
	}
	flags, err := strconv.ParseUint(string(f[6]), 10, 64)
	if err != nil || flags&pfKthread == 0 {
		return 0, false
	}
	ut, err1 := strconv.ParseUint(string(f[11]), 10, 64)
	st, err2 := strconv.ParseUint(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return ut + st, true
}
