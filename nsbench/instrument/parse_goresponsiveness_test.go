package instrument

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// goresponsiveness's real -debug output (its tail from "Results:", a run
// against the rpm server on a veth pair, 4 connections, 10 s) gives its
// final trimmed means, its own figure and the draft's from the same
// means; a figure that does not follow from them, or output without the
// final block, is an error.
func TestParseGoResponsiveness(t *testing.T) {
	out, err := os.ReadFile("testdata/goresponsiveness-debug-tail.txt")
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseGoResponsiveness(out)
	if err != nil {
		t.Fatal(err)
	}
	want := GoResponsivenessReport{RPM: 906, RPMP90: 422, SelfMs: 84.978, ForeignMs: 47.437, DownloadMbps: 1045.506, UploadMbps: 306.489}
	if math.Abs(r.SelfMs-want.SelfMs) > 1e-9 || math.Abs(r.ForeignMs-want.ForeignMs) > 1e-9 {
		t.Errorf("trimmed means %g / %g ms, want %g / %g", r.SelfMs, r.ForeignMs, want.SelfMs, want.ForeignMs)
	}
	if r.RPM != want.RPM || r.RPMP90 != want.RPMP90 || r.DownloadMbps != want.DownloadMbps || r.UploadMbps != want.UploadMbps || r.ThroughputStable {
		t.Errorf("got %+v, want %+v (throughput not stable)", r, want)
	}
	// The draft's mean of 60000/47.437 and 60000/84.978: (1264.84 + 706.07) / 2.
	if d := r.DraftRPM(); math.Abs(d-985.46) > 0.01 {
		t.Errorf("draft RPM %.3f, want 985.46", d)
	}
	if _, err := ParseGoResponsiveness([]byte(strings.Replace(string(out), "Final RPM: 906 (Single", "Final RPM: 1906 (Single", 1))); err == nil {
		t.Error("a figure that does not follow from its means parsed")
	}
	if _, err := ParseGoResponsiveness([]byte(strings.Replace(string(out), "\nFinal RPM Calculation stats:", "\n", 1))); err == nil {
		t.Error("output without -debug's final block parsed")
	}
	args := strings.Join(GoResponsivenessArgs("10.0.0.2:12871", 4, 9500*time.Millisecond), " ")
	if args != "-url https://10.0.0.2:12871/.well-known/nq -rpm.parallel -rpm.mnp 4 -rpm.tmp 95 -rpm.timeout 10 -debug" {
		t.Errorf("args %q", args)
	}
}
