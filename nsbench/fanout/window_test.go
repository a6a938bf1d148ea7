package fanout

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// fakeIPerf3 is a TCP iperf3 client's -R -J output whose intervals of
// step seconds carry rate(t) Mbit/s (t from the test's start) over sec
// seconds; end.sum_received is their mean, as iperf3 reports it.
func fakeIPerf3(t *testing.T, sec, step float64, rate func(t float64) float64) []byte {
	t.Helper()
	type sum struct {
		Start   float64 `json:"start"`
		End     float64 `json:"end"`
		Seconds float64 `json:"seconds"`
		Bytes   int64   `json:"bytes"`
		Bps     float64 `json:"bits_per_second"`
		Omitted bool    `json:"omitted"`
	}
	var ivs []map[string]sum
	var total int64
	for k := 0; float64(k)*step < sec-1e-9; k++ {
		s := float64(k) * step
		b := int64(rate(s) * 1e6 / 8 * step)
		total += b
		ivs = append(ivs, map[string]sum{"sum": {Start: s, End: s + step, Seconds: step, Bytes: b, Bps: float64(b) * 8 / step}})
	}
	end := sum{End: sec, Seconds: sec, Bytes: total, Bps: float64(total) * 8 / sec}
	out, err := json.Marshal(map[string]any{
		"start":     map[string]any{"test_start": map[string]any{"protocol": "TCP", "num_streams": 1, "duration": sec, "reverse": 1}},
		"intervals": ivs,
		"end":       map[string]any{"sum_sent": end, "sum_received": end},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// staggered are two clients on a 100 Mbit/s path that share it while
// both send, each -t 10, the second started lag seconds after the first:
// alone a client gets 100, together 50 each. Each test begins 20 ms
// after its launch and its process exits 50 ms after its test's start
// plus 10 s.
func staggered(t *testing.T, lag float64) []clientRun {
	t.Helper()
	t0 := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	first := fakeIPerf3(t, 10, 0.1, func(s float64) float64 {
		if s < lag {
			return 100
		}
		return 50
	})
	second := fakeIPerf3(t, 10, 0.1, func(s float64) float64 {
		if s < 10-lag {
			return 50
		}
		return 100
	})
	return []clientRun{
		{launched: at(0), exited: at(10.05), out: first},
		{launched: at(lag - 0.02), exited: at(lag + 10.03), out: second},
	}
}

// Client 2 starts 3 s after client 1, both for 10 s on a path of 100
// Mbit/s. Each one's own mean is 65 Mbit/s (alone 3 s at 100, together
// 7 s at 50), so summing them reads 130 Mbit/s from a 100 Mbit/s path;
// over the 7 s in which both were sending each got 50.
func TestCommonWindowStaggered(t *testing.T) {
	runs := staggered(t, 3)
	var own float64
	for _, r := range runs {
		bps, err := instrument.IPerf3Received(r.out)
		if err != nil {
			t.Fatal(err)
		}
		own += bps / 1e6
	}
	if math.Abs(own-130) > 0.5 {
		t.Fatalf("the clients' own means sum to %.1f Mbit/s, want the overstated 130", own)
	}
	row := results.ClientsRow{N: 2}
	commonWindow(runs).record(&row, ClientRoles(2), 10*time.Second)
	if row.Error != "" || len(row.Failed) > 0 || len(row.PerClientMbps) != 2 {
		t.Fatalf("row %+v, want both clients measured", row)
	}
	var agg float64
	for i, x := range row.PerClientMbps {
		if math.Abs(x-50) > 0.5 {
			t.Errorf("client %d: %.2f Mbit/s over the common window, want 50", i+1, x)
		}
		agg += x
	}
	if math.Abs(agg-100) > 1 {
		t.Errorf("aggregate %.2f Mbit/s, want the path's 100", agg)
	}
	// Both surely sending: from client 2's latest possible start (3.03 s:
	// its exit less its 10 s) to client 1's earliest possible end (10 s:
	// its launch plus its 10 s).
	if row.OverlapSec == nil || math.Abs(*row.OverlapSec-6.97) > 0.005 {
		t.Errorf("overlap %v, want 6.97 s", row.OverlapSec)
	}
}

// Started 7 s apart, two 10 s streams share under 3 s: less than half the
// duration, so the row says so and gives no rates to sum.
func TestCommonWindowTooShort(t *testing.T) {
	row := results.ClientsRow{N: 2}
	commonWindow(staggered(t, 7)).record(&row, ClientRoles(2), 10*time.Second)
	if len(row.PerClientMbps) != 0 || !strings.Contains(row.Error, "overlapped only 2.97 s of their 10 s, less than half") {
		t.Errorf("row %+v, want no rates and the short overlap named", row)
	}
	if row.OverlapSec == nil || math.Abs(*row.OverlapSec-2.97) > 0.005 {
		t.Errorf("overlap %v, want 2.97 s", row.OverlapSec)
	}
}

// A client whose iperf3 failed is named and leaves the window to the
// others: alone, client 1's 100 Mbit/s over its own whole test.
func TestCommonWindowFailedClient(t *testing.T) {
	runs := staggered(t, 3)
	runs[1] = clientRun{err: errors.New("iperf3: context deadline exceeded")}
	row := results.ClientsRow{N: 2}
	commonWindow(runs).record(&row, ClientRoles(2), 10*time.Second)
	if !slices.Equal(row.Failed, []string{"client2: iperf3: context deadline exceeded"}) || len(row.PerClientMbps) != 1 || row.Error != "" {
		t.Fatalf("row %+v, want client2 failed and client1 measured", row)
	}
	// Client 1's window: 0.05 s to 10 s; its intervals from 0.1 s to 9.9 s.
	want := (2.9*100 + 6.9*50) / 9.8
	if math.Abs(row.PerClientMbps[0]-want) > 0.05 {
		t.Errorf("client1 %.2f Mbit/s, want %.2f (its whole intervals inside its window)", row.PerClientMbps[0], want)
	}
	if row.OverlapSec == nil || math.Abs(*row.OverlapSec-9.95) > 0.005 {
		t.Errorf("overlap %v, want 9.95 s", row.OverlapSec)
	}
}

// Streams that never overlapped have no window: the row says so. With
// every client failed there is nothing to place: no window, each named.
func TestCommonWindowNone(t *testing.T) {
	row := results.ClientsRow{N: 2}
	commonWindow(staggered(t, 11)).record(&row, ClientRoles(2), 10*time.Second)
	if len(row.PerClientMbps) != 0 || len(row.Failed) != 0 || row.OverlapSec == nil || *row.OverlapSec != 0 ||
		!strings.Contains(row.Error, "overlapped only 0.00 s") {
		t.Errorf("disjoint streams: row %+v", row)
	}
	row = results.ClientsRow{N: 2}
	failed := errors.New("iperf3: context deadline exceeded")
	commonWindow([]clientRun{{err: failed}, {err: failed}}).record(&row, ClientRoles(2), 10*time.Second)
	if row.OverlapSec != nil || row.Error != "" || len(row.Failed) != 2 {
		t.Errorf("every client failed: row %+v", row)
	}
}

// iperf3's -t takes whole seconds (3.12 reads it with atoi): a
// fractional duration is refused before anything is made, not cut.
func TestRunRefusesFractionalDuration(t *testing.T) {
	for _, d := range []time.Duration{1500 * time.Millisecond, 500 * time.Millisecond, 0} {
		dir := t.TempDir()
		doc := &results.Clients{Counts: []int{1}, DurationSec: d.Seconds()}
		err := Run(t.Context(), Plan{Counts: []int{1}, Duration: d, OutDir: dir}, nil, doc, nil, t.Logf)
		if err == nil || !strings.Contains(err.Error(), "whole seconds") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Run with --duration %s: %v, want a one-line refusal", d, err)
		}
		if _, err := os.Stat(filepath.Join(dir, results.ClientsFileName)); !os.IsNotExist(err) {
			t.Errorf("--duration %s: %s written (%v)", d, results.ClientsFileName, err)
		}
	}
	args := strings.Join(iperf3Args("10.0.0.2", "12900", 3*time.Second), " ")
	if !strings.Contains(args, "-t 3 ") || !strings.Contains(args, "-i 0.1 ") {
		t.Errorf("iperf3 %s, want -t 3 and reports every 0.1 s", args)
	}
}
