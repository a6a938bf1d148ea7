package nsbench

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/metrics"
)

// TestPinLayout: each layout's CPUs are the first of the run's own, the
// clients (the sweep's too) apart from the server and the relay with
// split; a layout needing more CPUs than the run may use is refused.
func TestPinLayout(t *testing.T) {
	for _, tc := range []struct {
		layout          string
		allowed         []int
		client, others  []int
		refusedContains string
	}{
		{layout: PinSame, allowed: []int{2, 3}, client: []int{2}, others: []int{2}},
		{layout: PinSplit, allowed: []int{2, 3, 5}, client: []int{2}, others: []int{3}},
		{layout: PinSame, allowed: []int{0}, client: []int{0}, others: []int{0}},
		{layout: PinSplit, allowed: []int{1}, refusedContains: "--pin split: needs 2 CPUs, the run may use 1 (1)"},
		{layout: "spread", allowed: []int{0, 1}, refusedContains: `--pin "spread": want off, same`},
	} {
		p, err := newPinLayout(tc.layout, tc.allowed)
		if tc.refusedContains != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refusedContains) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s on %v: error %v, want one line with %q", tc.layout, tc.allowed, err, tc.refusedContains)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s on %v: %v", tc.layout, tc.allowed, err)
		}
		for name, want := range map[string][]int{"client": tc.client, "client12": tc.client, "server": tc.others, "relay": tc.others, "clientx": tc.others} {
			if got := p.cpusOf(name); !slices.Equal(got, want) {
				t.Errorf("%s on %v: %s on %v, want %v", tc.layout, tc.allowed, name, got, want)
			}
		}
	}
	if p, err := newPinLayout(PinOff, []int{0}); err != nil || p.record([]string{"client"}) != nil {
		t.Errorf("off: %+v, %v: want no layout and nothing recorded", p, err)
	}
}

// TestPinRefused: NewPlan refuses, before anything exists, a layout this
// host has too few CPUs for, and a layout with --host.
func TestPinRefused(t *testing.T) {
	known := []string{"ssh"}
	ok := Defaults()
	ok.OutDir = t.TempDir()
	cpus, err := metrics.AffinityCPUs()
	if err != nil {
		t.Fatal(err)
	}
	ok.Pin = PinSplit
	_, err = NewPlan(ok, known)
	if len(cpus) >= 2 && err != nil {
		t.Errorf("--pin split with %d CPUs: %v", len(cpus), err)
	}
	if len(cpus) < 2 && (err == nil || !strings.Contains(err.Error(), "needs 2 CPUs")) {
		t.Errorf("--pin split with %d CPU: error %v, want refused", len(cpus), err)
	}
	across := ok
	across.WAN, across.Pin = []string{"off"}, PinSame
	across.Hosts.Inventory.Hosts = []hosts.Host{
		{Role: "client", Addr: "192.0.2.1", RoleAddr: netip.MustParsePrefix("192.0.2.11/24")},
		{Role: "server", Addr: "192.0.2.2", RoleAddr: netip.MustParsePrefix("192.0.2.12/24")},
	}
	if _, err := NewPlan(across, known); err == nil || !strings.Contains(err.Error(), "--pin same: not with --host") {
		t.Errorf("--pin with --host: error %v, want refused", err)
	}
	off := ok
	off.Pin = PinOff
	if p, err := NewPlan(off, known); err != nil || p.Pin != "" {
		t.Errorf("--pin off: %v, pin %q: want no layout", err, p.Pin)
	}
}
