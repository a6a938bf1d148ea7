package instrument

import (
	"math"
	"testing"
	"time"
)

// TestUDPSizesValueOverEverySize: the value is over the same sizes in
// every sample, a size that received nothing at its floor (one datagram
// in the test), so more received at any size never reads slower: a build
// that newly passes 1472-byte datagrams reads faster than one that
// passes none there (the geometric mean over the sizes that received
// anything read 70.0 against 41.3, the wrong way).
func TestUDPSizesValueOverEverySize(t *testing.T) {
	sizes := []int{64, 512, 1024, 1392, 1472}
	const d = 10 * time.Second
	none, n0 := udpSizesValue(sizes, []float64{10, 80, 150, 200, 0}, d)
	some, n5 := udpSizesValue(sizes, []float64{10, 80, 150, 200, 5}, d)
	if n0 != 4 || n5 != 5 {
		t.Errorf("sizes received %d and %d, want 4 and 5", n0, n5)
	}
	floor := 1472 * 8 / d.Seconds() / 1e6 // Mbit/s: one 1472-byte datagram in 10 s
	if want := math.Pow(10*80*150*200*floor, 0.2); math.Abs(none-want) > 1e-9*want {
		t.Errorf("nothing at 1472 B: value %g, want %g (the floor %g Mbit/s in the mean)", none, want, floor)
	}
	if want := math.Pow(10*80*150*200*5, 0.2); math.Abs(some-want) > 1e-9*want || some <= none {
		t.Errorf("5 Mbit/s at 1472 B: value %g (none there: %g), want %g, above", some, none, want)
	}
	// More at any one size never lowers the value.
	base := []float64{10, 80, 150, 200, 0}
	for i := range base {
		more := append([]float64(nil), base...)
		more[i] += 1
		if v, _ := udpSizesValue(sizes, more, d); v <= none {
			t.Errorf("+1 Mbit/s at %d B: value %g, not above %g", sizes[i], v, none)
		}
	}
	if v, n := udpSizesValue(sizes, make([]float64, 5), d); n != 0 || v != 0 {
		t.Errorf("nothing at any size: %g over %d, want 0 over 0 (the sample fails)", v, n)
	}
}
