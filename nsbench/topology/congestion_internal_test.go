package topology

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// Several topologies setting a congestion control the host does not allow,
// all at once (the fault test runs two cases side by side; two runs on one
// host do the same): every one gets its algorithm and the host's allowed
// list ends as it began. Without the lock the extend-set-restore sequences
// interleaved: one run's restore pulled the algorithm out from under
// another's writes (EPERM in CI), and a run that read another's extended
// list as the original put that back, leaving the host changed.
func TestCongestionConcurrentRuns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces and writes a global sysctl")
	}
	want := availableNotAllowed(t)
	before := readSysctl(t, sysctlAllowedCC)
	const runs, roles, rounds = 6, 3, 5
	topos := make([]*Topology, runs)
	prefix := fmt.Sprintf("twnsb-cc%d", os.Getpid()%100000)
	for i := range topos {
		topo := &Topology{Spec: Spec{Congestion: want}, Roles: map[string]*Role{}}
		for j := 0; j < roles; j++ {
			name := fmt.Sprintf("r%d", j)
			n, err := ns.Create(fmt.Sprintf("%s-%d-%s", prefix, i, name))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { n.Close(); ns.Delete(n.Name) })
			topo.Spec.Roles = append(topo.Spec.Roles, name)
			topo.Roles[name] = &Role{Name: name, NS: n}
		}
		topos[i] = topo
	}
	var wg sync.WaitGroup
	errs := make([]error, runs)
	for i, topo := range topos {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds && errs[i] == nil; r++ {
				errs[i] = topo.applyCongestion()
				// Back to the host's default, so the next round takes the
				// extend path again.
				if err := topo.setCongestion(strings.Fields(before)[0]); err != nil && errs[i] == nil {
					errs[i] = err
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
	if after := readSysctl(t, sysctlAllowedCC); after != before {
		t.Errorf("host's allowed list %q after the runs, was %q", after, before)
	}
	for i, topo := range topos {
		if n := len(topo.SysctlChanges); n != rounds {
			t.Errorf("run %d recorded %d sysctl changes, want %d (one per round)", i, n, rounds)
		}
	}
}

// availableNotAllowed returns an algorithm the kernel has but the host does
// not allow in namespaces, or skips: only then is the list extended.
func availableNotAllowed(t *testing.T) string {
	allowed := strings.Fields(readSysctl(t, sysctlAllowedCC))
	for _, a := range strings.Fields(readSysctl(t, sysctlAvailCC)) {
		if !contains(allowed, a) {
			return a
		}
	}
	t.Skipf("every available congestion control is allowed (%v): nothing to extend", allowed)
	return ""
}

func readSysctl(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
