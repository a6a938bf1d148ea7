package metrics

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestSub(t *testing.T) {
	prev := Snapshot{
		HostBusyTicks: 19123,
		RoleUsageUsec: map[string]uint64{"client": 187_684_000, "server": 5_000_000, "gone": 1},
		ClientRxBytes: 1_000,
		HarnessCPUSec: 1.25,
	}
	now := Snapshot{
		HostBusyTicks: 20123, // +1000 ticks = 10 s
		RoleUsageUsec: map[string]uint64{"client": 190_184_000, "server": 5_000_000, "relay": 7_000_000},
		ClientRxBytes: 1_000 + 5<<30,
		HarnessCPUSec: 1.5,
	}
	d := now.Sub(prev)
	if d.HostCPUSec != 10 {
		t.Errorf("HostCPUSec = %v, want 10", d.HostCPUSec)
	}
	// "relay" is only in now and "gone" only in prev: neither has a delta.
	want := map[string]float64{"client": 2.5, "server": 0}
	if !maps.Equal(d.RoleCPUSec, want) {
		t.Errorf("RoleCPUSec = %v, want %v", d.RoleCPUSec, want)
	}
	if d.ClientRxBytes != 5<<30 {
		t.Errorf("ClientRxBytes = %d, want %d", d.ClientRxBytes, int64(5<<30))
	}
	if d.HarnessCPUSec != 0.25 {
		t.Errorf("HarnessCPUSec = %v, want 0.25", d.HarnessCPUSec)
	}
	wantStr := "host 10.00 CPU-s, client 2.50 CPU-s, server 0.00 CPU-s, rx 5368709120 B, harness 0.25 CPU-s"
	if s := d.String(); s != wantStr {
		t.Errorf("String = %q\nwant       %q", s, wantStr)
	}
}

// TestSubBackwards: a counter that went backwards (cgroup or link replaced
// between the reads) shows as a negative delta, not as a wrapped uint64.
func TestSubBackwards(t *testing.T) {
	prev := Snapshot{HostBusyTicks: 500, RoleUsageUsec: map[string]uint64{"client": 3_000_000}, ClientRxBytes: 4096}
	now := Snapshot{HostBusyTicks: 400, RoleUsageUsec: map[string]uint64{"client": 1_000_000}, ClientRxBytes: 96}
	d := now.Sub(prev)
	if d.HostCPUSec != -1 || d.RoleCPUSec["client"] != -2 || d.ClientRxBytes != -4000 {
		t.Errorf("Sub = %+v, want host -1, client -2, rx -4000", d)
	}
}

func TestSubEmpty(t *testing.T) {
	d := Snapshot{}.Sub(Snapshot{})
	if d.HostCPUSec != 0 || len(d.RoleCPUSec) != 0 || d.ClientRxBytes != 0 || d.HarnessCPUSec != 0 {
		t.Errorf("zero Sub = %+v", d)
	}
	if s := d.String(); s != "host 0.00 CPU-s, rx 0 B, harness 0.00 CPU-s" {
		t.Errorf("String = %q", s)
	}
}

func TestSampler(t *testing.T) {
	usage := uint64(100)
	sm := &Sampler{
		Roles: map[string]func() (uint64, error){
			"client": func() (uint64, error) { usage += 2_000_000; return usage, nil },
			"relay":  nil, // skipped
		},
		ClientRxBytes: func() (uint64, error) { return 42, nil },
	}
	a, err := sm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if a.RoleUsageUsec["client"] != 2_000_100 || len(a.RoleUsageUsec) != 1 {
		t.Errorf("roles = %v, want client only", a.RoleUsageUsec)
	}
	if a.ClientRxBytes != 42 || a.HostBusyTicks == 0 || a.HarnessCPUSec <= 0 {
		t.Errorf("snapshot = %+v", a)
	}
	b, err := sm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	d := b.Sub(a)
	if d.RoleCPUSec["client"] != 2 || d.ClientRxBytes != 0 || d.HostCPUSec < 0 || d.HarnessCPUSec < 0 {
		t.Errorf("delta = %+v", d)
	}
}

func TestSamplerErrors(t *testing.T) {
	errGone := errors.New("cgroup gone")
	sm := &Sampler{
		Roles:         map[string]func() (uint64, error){"server": func() (uint64, error) { return 0, errGone }},
		ClientRxBytes: func() (uint64, error) { return 0, errors.New("link not found") },
	}
	s, err := sm.Snapshot()
	if !errors.Is(err, errGone) {
		t.Fatalf("err = %v, want it to wrap %v", err, errGone)
	}
	for _, w := range []string{"read role server cpu: cgroup gone", "read client rx bytes: link not found"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err = %q, want it to contain %q", err, w)
		}
	}
	if s.HostBusyTicks != 0 || s.RoleUsageUsec != nil {
		t.Errorf("snapshot on error = %+v, want zero", s)
	}
}

// An observer sees each Snapshot that reads a run's cgroup, as it was
// returned and with the cgroup's name; not those without the run (nor a
// failed one), and nothing once stopped.
func TestObserveSeesTheRunsSnapshots(t *testing.T) {
	type seen struct {
		cgroup string
		s      Snapshot
	}
	var got []seen
	stop := Observe(func(cg string, s Snapshot) { got = append(got, seen{cg, s}) })
	usage := uint64(0)
	run := &Sampler{Run: func() (uint64, error) { usage += 7; return usage, nil }, RunCgroup: "/twnsbench-no-such-run"}
	a, err := run.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&Sampler{}).Snapshot(); err != nil {
		t.Fatal(err)
	}
	failing := &Sampler{Run: func() (uint64, error) { return 0, errors.New("cgroup gone") }, RunCgroup: "/twnsbench-no-such-run"}
	if _, err := failing.Snapshot(); err == nil {
		t.Fatal("a failed read of the run's cgroup: want an error")
	}
	stop()
	if _, err := run.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].cgroup != "/twnsbench-no-such-run" || got[0].s.RunUsageUsec != a.RunUsageUsec || !got[0].s.At.Equal(a.At) {
		t.Errorf("observed %+v, want the run's first snapshot only (%d usec at %v)", got, a.RunUsageUsec, a.At)
	}
}
