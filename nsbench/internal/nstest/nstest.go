// Package nstest holds helpers for tests that need root and real
// namespaces: the root gate, a per-test prefix, and the residue check that
// fails a package whose tests leave anything behind.
package nstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// RequireRoot skips a test that needs root when not root. With root it runs.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root (run: sudo go test ./...)")
	}
}

// Prefix returns a fresh run prefix for one test.
func Prefix(tb testing.TB) string {
	tb.Helper()
	p, err := topology.NewPrefix()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Main runs the package's tests, then fails the package (exit 99) when
// anything named with the twnsbench prefix is left: namespaces, /etc/netns
// entries, or the processes of the launcher. Call it from TestMain.
func Main(m *testing.M) {
	ns.MaybeRunHelper() // tests start children through the launcher
	code := m.Run()
	if os.Geteuid() == 0 {
		if left := Residue(topology.Prefix); len(left) > 0 {
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
	return left
}
