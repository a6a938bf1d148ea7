package topology

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

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
		errs = append(errs, deleteLinks(n), ns.Delete(n))
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

// deleteLinks deletes the links of namespace name, but lo, before the
// namespace goes: the kernel frees a deleted namespace's links only
// later, once its last reference is gone, and until then a role's
// macvlan child on a host's interface still answers ARP for the role's
// address, so that the next testbed on that address (the many-client
// sweep builds one per transport and count) would find it taken. Deleting
// a link returns once it is gone. A namespace already gone has none.
func deleteLinks(name string) error {
	n, err := ns.Open(name)
	if err != nil {
		return nil // gone, or not a namespace: ns.Delete says which
	}
	defer n.Close()
	h, err := n.Netlink()
	if err != nil {
		return fmt.Errorf("clean %s: %w", name, err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return fmt.Errorf("clean %s: list links: %w", name, err)
	}
	var errs []error
	for _, l := range links {
		if l.Attrs().Name == "lo" {
			continue
		}
		// A veth's peer goes with it: not found is done.
		if err := h.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("clean %s: delete %s: %w", name, l.Attrs().Name, err))
		}
	}
	return errors.Join(errs...)
}
