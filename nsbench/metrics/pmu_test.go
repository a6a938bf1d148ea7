package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSources makes an event_source/devices directory holding each PMU
// with the files of its events directory.
func fakeSources(t *testing.T, pmus map[string][]string) string {
	t.Helper()
	dir := t.TempDir()
	for pmu, events := range pmus {
		if err := os.MkdirAll(filepath.Join(dir, pmu), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, pmu, "type"), []byte("4\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			p := filepath.Join(dir, pmu, "events", ev)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("event=0xc0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func TestProbeHardwareCounters(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pmus    map[string][]string
		wantPMU string
		why     string // a part of the reason, when none
	}{
		{"this kind of VM", map[string][]string{"breakpoint": nil, "msr": {"tsc", "aperf"}, "power": {"energy-pkg"}, "software": nil, "tracepoint": nil, "uprobe": nil},
			"", "no CPU PMU counting instructions and cycles (only breakpoint, msr, power, software, tracepoint, uprobe): a virtual machine"},
		{"x86 bare metal", map[string][]string{"cpu": {"instructions", "cpu-cycles", "branch-misses"}, "software": nil}, "cpu", ""},
		{"x86 hybrid", map[string][]string{"cpu_atom": {"instructions", "cpu-cycles"}, "cpu_core": {"instructions", "cpu-cycles"}, "software": nil}, "cpu_atom", ""},
		{"arm64", map[string][]string{"armv8_pmuv3_0": {"inst_retired", "cpu_cycles"}, "software": nil}, "armv8_pmuv3_0", ""},
		{"cycles without instructions", map[string][]string{"cpu": {"cpu-cycles"}}, "", "only cpu"},
		{"empty", map[string][]string{}, "", "lists no event source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := ProbeHardwareCounters(fakeSources(t, tc.pmus))
			if h.PMU != tc.wantPMU || h.Available() != (tc.wantPMU != "") {
				t.Fatalf("PMU %q (available %v), want %q", h.PMU, h.Available(), tc.wantPMU)
			}
			if tc.why != "" && (!strings.Contains(h.Why, tc.why) || !strings.HasPrefix(h.String(), "not available on this host: ")) {
				t.Errorf("reason %q, want it to contain %q", h.String(), tc.why)
			}
			if tc.wantPMU != "" && h.String() != "available (PMU "+tc.wantPMU+": instructions, cycles)" {
				t.Errorf("sentence %q", h.String())
			}
		})
	}
	if h := ProbeHardwareCounters(filepath.Join(t.TempDir(), "missing")); h.Available() || !strings.Contains(h.Why, "does not exist") {
		t.Errorf("missing directory: %+v", h)
	}
}
