package preflight

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
)

// parseKernelConfig reads a kernel .config: "CONFIG_X=y", "CONFIG_X=m",
// "CONFIG_X=\"text\"" and "# CONFIG_X is not set". Unset symbols are left
// out of the map, so a missing key and "is not set" mean the same.
func parseKernelConfig(r io.Reader) (map[string]string, error) {
	cfg := make(map[string]string)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "CONFIG_") {
			continue // comments, "# CONFIG_X is not set", blank lines
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("parse kernel config line %q", line)
		}
		cfg[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse kernel config: %w", err)
	}
	return cfg, nil
}

// readKernelConfig reads a config file, gunzipping names ending in ".gz".
func readKernelConfig(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read kernel config: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("read kernel config %s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	cfg, err := parseKernelConfig(r)
	if err != nil {
		return nil, fmt.Errorf("read kernel config %s: %w", path, err)
	}
	return cfg, nil
}
