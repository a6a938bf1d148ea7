package preflight

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// memAvailable reads MemAvailable from /proc/meminfo, in bytes.
func memAvailable() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("read meminfo: %w", err)
	}
	defer f.Close()
	n, err := parseMemAvailable(f)
	if err != nil {
		return 0, fmt.Errorf("read /proc/meminfo: %w", err)
	}
	return n, nil
}

// parseMemAvailable finds "MemAvailable:   24315444 kB" and returns bytes.
// MemAvailable (Linux 3.14+) is the kernel's estimate of what can be
// allocated without swapping, page cache it can drop included; tmpfs pages
// count against it.
func parseMemAvailable(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		num, unit, _ := strings.Cut(strings.TrimSpace(v), " ")
		if unit != "kB" {
			return 0, fmt.Errorf("MemAvailable %q: unit is not kB", strings.TrimSpace(v))
		}
		kB, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse MemAvailable: %w", err)
		}
		return kB * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no MemAvailable line")
}
