// Package nstest holds helpers for tests that need root and real
// namespaces: the root gate, a per-test prefix, and the residue check that
// fails a package whose tests leave anything behind.
package nstest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/residue"
	"github.com/twnsbench/twnsbench/nsbench/topology"
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
// anything named with a prefix its tests used is left (Residue). Call it
// from TestMain.
func Main(m *testing.M) {
	ns.MaybeRunHelper() // tests start children through the launcher
	// A run starts a test binary as one of its own parts by a first
	// argument that is no test flag (an agent, a prober, a forwarder),
	// and the package's TestMain has served and exited for every part it
	// knows by now. One left is a part this binary lacks: say so at once
	// rather than run the whole suite in its place, which hangs the run
	// that waits for the part until its bound.
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-test.") {
		fmt.Fprintf(os.Stderr, "nstest: this test binary cannot run as %q: its package's TestMain does not start that part\n", os.Args[1])
		os.Exit(2)
	}
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

// Residue lists everything that exists with the given prefix, of every
// kind a run creates (package residue): namespaces, links, cgroups,
// mounts, processes, files. The claim Prefix made for a test (its
// directory holding only the owner file) is the test's own, not a leak.
func Residue(prefix string) []string {
	var left []string
	for _, o := range residue.Find(prefix) {
		if o.Kind == residue.KindFile && isClaim(o.What) {
			continue
		}
		left = append(left, o.String())
	}
	return left
}

// isClaim reports whether dir is a claim made by Prefix in this process:
// /tmp/<prefix> holding nothing but its owner file.
func isClaim(dir string) bool {
	mu.Lock()
	ours := slices.Contains(issued, filepath.Base(dir))
	mu.Unlock()
	entries, err := os.ReadDir(dir)
	return ours && dir == filepath.Join("/tmp", filepath.Base(dir)) && err == nil &&
		len(entries) == 1 && entries[0].Name() == "harness.pid"
}
