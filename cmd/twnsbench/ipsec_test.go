package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

const noESP = "this kernel has no ESP (CONFIG_INET_ESP) — use a kernel with ESP (make vmtest runs Debian's stock kernel), or strongswan (ESP in userspace)"

// TestIPsecWithoutESP: on a kernel without ESP (this host's: the xfrm
// core takes a policy, then black-holes) the probe says so; doctor lists
// the kernel-ESP transports (both manual-SA ones, strongswan-kernel,
// libreswan) with that reason, and a run naming one is refused (exit 2)
// before anything exists, with one line per row. Where the kernel has
// ESP, make vmtest's ipsec check runs them.
func TestIPsecWithoutESP(t *testing.T) {
	nstest.RequireRoot(t)
	ts, err := transport.Build([]string{"ipsec"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts[0].Check(); err == nil || err.Error() != noESP {
		t.Skipf("the probe says %v, not that ESP is missing: make vmtest's ipsec check covers this kernel", err)
	}
	before := nsbench.Leftovers()
	nsBefore, _ := ns.List(topology.Prefix)
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runInProcess("run", "--transports", "ssh,ipsec:chacha20-poly1305,ipsec-tunnel", "--quick", "--out", out)
	if code != exitRefused {
		t.Errorf("exit %d, want %d (stderr %q)", code, exitRefused, stderr)
	}
	for _, want := range []string{"ipsec:chacha20-poly1305 cannot run here: " + noESP, "ipsec-tunnel cannot run here: " + noESP} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
	if strings.Contains(stderr, "ssh cannot") {
		t.Errorf("stderr %q: ssh can run here", stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("created the output directory")
	}
	// Libreswan alone, its second variant included: refused with the
	// kernel's reason, not for a missing program (Check probes ESP first).
	code, _, stderr = runInProcess("run", "--transports", "libreswan,libreswan:aes128-sha1", "--quick", "--out", out)
	if code != exitRefused {
		t.Errorf("libreswan: exit %d, want %d (stderr %q)", code, exitRefused, stderr)
	}
	if want := "twnsbench: --transports: libreswan cannot run here: " + noESP + "; libreswan:aes128-sha1 cannot run here: " + noESP + "\n"; stderr != want {
		t.Errorf("libreswan: stderr %q, want the one line %q", stderr, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("libreswan: created the output directory")
	}
	var b strings.Builder
	writeTransports(&b, nil)
	for _, name := range []string{"ipsec", "ipsec-tunnel", "strongswan-kernel", "libreswan"} {
		found := false
		for _, line := range strings.Split(b.String(), "\n") {
			f := strings.Fields(line)
			if len(f) > 2 && f[1] == "transport" && f[2] == name {
				found = f[0] == "cannot" && strings.HasSuffix(line, " "+noESP)
			}
		}
		if !found {
			t.Errorf("doctor does not list %s as unable to run with %q:\n%s", name, noESP, b.String())
		}
	}
	// The probes' throwaway namespaces are gone, and nothing else appeared.
	if after := newLeftovers(before); len(after) > 0 {
		t.Errorf("created %v", after)
	}
	nsAfter, _ := ns.List(topology.Prefix)
	for _, n := range nsAfter {
		if !slices.Contains(nsBefore, n) && strings.HasSuffix(n, "-ipsec-probe") {
			t.Errorf("the ESP probe left namespace %s", n)
		}
	}
}
