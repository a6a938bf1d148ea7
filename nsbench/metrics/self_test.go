package metrics

import (
	"runtime"
	"testing"
	"time"
)

// TestSelfCPUSec spins until the process has used 50 ms more CPU, and
// checks that the growth fits the wall time that passed.
func TestSelfCPUSec(t *testing.T) {
	before, err := SelfCPUSec()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	x := uint64(1)
	for {
		for range 100_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		now, err := SelfCPUSec()
		if err != nil {
			t.Fatal(err)
		}
		wall := time.Since(start).Seconds()
		if d := now - before; d >= 0.05 {
			if limit := wall*float64(runtime.NumCPU()) + 0.02; d > limit {
				t.Errorf("SelfCPUSec grew %.3f s in %.3f s of wall time on %d CPUs", d, wall, runtime.NumCPU())
			}
			return
		}
		if wall > 10 {
			t.Fatalf("SelfCPUSec grew only %.3f s in %.1f s of spinning (x=%d)", now-before, wall, x)
		}
	}
}
