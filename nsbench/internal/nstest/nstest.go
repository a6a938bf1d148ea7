// Package nstest holds helpers for tests that need root and real
// namespaces: the root gate, a per-test prefix, and the residue check that
// fails a package whose tests leave anything behind.
package nstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/wg"
)

// RequireRoot skips a test that needs root when not root. With root it runs.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test (skipped by -short)")
	}
	if os.Geteuid() != 0 {
		tb.Skip("needs root (run: sudo go test ./...)")
	}
}

// Prefix returns a fresh run prefix for one test. Like a run, the test
// claims it with an owner file (/tmp/<prefix>/harness.pid), so that a
// concurrent `twnsbench clean` leaves the test's namespaces alone.
func Prefix(tb testing.TB) string {
	tb.Helper()
	p, err := topology.NewPrefix()
	if err != nil {
		tb.Fatal(err)
	}
	mu.Lock()
	issued = append(issued, p)
	mu.Unlock()
	dir := filepath.Join("/tmp", p)
	if os.Geteuid() == 0 {
		if err := os.Mkdir(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.WriteFile(filepath.Join(dir, "harness.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return p
}

var (
	mu     sync.Mutex
	issued []string // prefixes handed out by Prefix in this process
)

// Main runs the package's tests, then fails the package (exit 99) when
// anything named with a prefix its tests used is left: namespaces or
// /etc/netns entries. Call it from TestMain.
func Main(m *testing.M) {
	ns.MaybeRunHelper() // tests start children through the launcher
	code := m.Run()
	if os.Geteuid() == 0 {
		var left []string
		for _, p := range issued {
			left = append(left, Residue(p)...)
		}
		if len(left) > 0 {
			fmt.Fprintf(os.Stderr, "nstest: tests left these behind:\n  %s\n", strings.Join(left, "\n  "))
			if code == 0 {
				code = 99
			}
		}
	}
	os.Exit(code)
}

// Residue lists what exists with the given prefix.
func Residue(prefix string) []string {
	var left []string
	names, _ := ns.List(prefix)
	for _, n := range names {
		left = append(left, "netns "+n)
	}
	matches, _ := filepath.Glob(filepath.Join(topology.EtcNetns, prefix+"*"))
	for _, m := range matches {
		left = append(left, "file "+m)
	}
	for _, s := range wg.Sockets(prefix) {
		left = append(left, "socket "+s)
	}
	return left
}
