package metrics

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// SelfCPUSec is the CPU time (user + system) the harness process itself has
// used since it started, all threads included. Its delta over a measurement
// is the harness's overhead during that cell. Children are not included:
// they run in role cgroups and are counted there.
func SelfCPUSec() (float64, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage self: %w", err)
	}
	return timevalSec(ru.Utime) + timevalSec(ru.Stime), nil
}

func timevalSec(tv unix.Timeval) float64 {
	return float64(tv.Sec) + float64(tv.Usec)/1e6
}
