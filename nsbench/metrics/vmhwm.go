package metrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNoVmHWM means a live task has no memory of its own to report: a kernel
// thread's status has no VmHWM line.
var ErrNoVmHWM = errors.New("no VmHWM line (kernel thread?)")

// ReadVmHWM returns the peak resident set size of a process, in kB, from
// /proc/PID/status. A process that has exited, reaped or still a zombie (a
// zombie's status has no Vm lines either), gives an error wrapping
// os.ErrNotExist; sample VmHWM while the process runs.
func ReadVmHWM(pid int) (kB int64, err error) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, unix.ESRCH):
		// The task died between open and read.
		return 0, fmt.Errorf("read %s: process has exited: %w", path, os.ErrNotExist)
	case err != nil:
		return 0, fmt.Errorf("read vmhwm: %w", err) // names the path
	}
	kB, err = parseVmHWM(bytes.NewReader(b))
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return kB, nil
}

// parseVmHWM reads "VmHWM:\t    1756 kB" from a status file.
func parseVmHWM(r io.Reader) (int64, error) {
	var state string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			state = v
		case "VmHWM":
			num, unit, _ := strings.Cut(v, " ")
			if unit != "kB" {
				return 0, fmt.Errorf("VmHWM %q: unit is not kB", v)
			}
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmHWM: %w", err)
			}
			return n, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	// "Z (zombie)" or "X (dead)": exited, not reaped yet.
	if strings.HasPrefix(state, "Z") || strings.HasPrefix(state, "X") {
		return 0, fmt.Errorf("process has exited (state %s): %w", state, os.ErrNotExist)
	}
	return 0, ErrNoVmHWM
}
