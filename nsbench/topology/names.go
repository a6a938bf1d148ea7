package topology

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// Prefix starts the name of everything twnsbench creates: namespaces,
// /etc/netns entries, cgroups, private directories. `twnsbench clean`
// removes by it and by nothing else.
const Prefix = "twnsb-"

// NewPrefix returns a prefix unique to one run, e.g. "twnsb-3fa9c1".
func NewPrefix() (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return Prefix + hex.EncodeToString(b[:]), nil
}

// Clean removes the namespaces and /etc/netns entries whose names start with
// prefix. It needs no other state, so it also clears what a killed run left.
// Processes in those namespaces must be gone first.
func Clean(prefix string) []error {
	if !strings.HasPrefix(prefix, Prefix) {
		return []error{fmt.Errorf("clean: refusing prefix %q (must start with %q)", prefix, Prefix)}
	}
	var errs []error
	names, err := ns.List(prefix)
	if err != nil {
		errs = append(errs, err)
	}
	for _, n := range names {
		errs = append(errs, ns.Delete(n))
	}
	entries, err := os.ReadDir(EtcNetns)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("clean %s: %w", EtcNetns, err))
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			if err := os.RemoveAll(filepath.Join(EtcNetns, e.Name())); err != nil {
				errs = append(errs, fmt.Errorf("clean %s: %w", e.Name(), err))
			}
		}
	}
	return errs
}
