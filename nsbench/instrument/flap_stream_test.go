package instrument

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/recovery"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestFlapStreamFigures: the stream's figures against a drop from 2 s to
// 3 s of the prober's clock (started at 100 s), from the timeline's
// stream, with the bound flagged, and absent with the reason when the
// stream measured nothing.
func TestFlapStreamFigures(t *testing.T) {
	start := time.Unix(100, 0)
	down, up := start.Add(2*time.Second), start.Add(3*time.Second)
	tl := func(s *recovery.Stream) recovery.Timeline {
		return recovery.Timeline{StartUnixNs: start.UnixNano(), Stream: s}
	}
	var m Measurement
	streamFigures(&m, tl(&recovery.Stream{Bytes: 5 << 20, First: 20 * time.Millisecond, Last: 5 * time.Second, End: 5 * time.Second,
		Gaps: []recovery.Gap{{From: 1990 * time.Millisecond, To: 4200 * time.Millisecond}}, Bins: []int64{12500, 0, 25000}}), down, up, FlapBound)
	// Its bytes per 100 ms as Mbit/s, at each slice's end.
	if len(m.Series) != 1 || m.Series[0].Key != "stream" || m.Series[0].Unit != "Mbit/s" ||
		!slices.Equal(m.Series[0].T, []float64{0.1, 0.2, 0.3}) || !slices.Equal(m.Series[0].V, []float64{1, 0, 2}) {
		t.Errorf("stream series %+v: want 1, 0 and 2 Mbit/s at 0.1, 0.2 and 0.3 s", m.Series)
	}
	if m.Extra[results.StreamResumed] != 1 || m.Extra[results.StreamGapSec] < 2.2099 || m.Extra[results.StreamGapSec] > 2.2101 ||
		m.Extra[results.AtLeastKey(results.StreamGapSec)] != 0 || m.Method != "" {
		t.Errorf("back at 4.2 s: %+v, want resumed, 2.21 s without a byte", m)
	}
	m = Measurement{Extra: map[string]float64{"lost": 3}}
	streamFigures(&m, tl(&recovery.Stream{Bytes: 1 << 20, First: 20 * time.Millisecond, Last: 1990 * time.Millisecond, End: 34 * time.Second}), down, up, FlapBound)
	if m.Extra[results.StreamResumed] != 0 || m.Extra[results.StreamGapSec] < 32.0099 || m.Extra[results.StreamGapSec] > 32.0101 ||
		m.Extra[results.AtLeastKey(results.StreamGapSec)] != 1 || m.Extra["lost"] != 3 {
		t.Errorf("never back: %+v, want not resumed, ≥ 32.01 s without a byte, flagged", m)
	}
	for name, s := range map[string]*recovery.Stream{
		"the prober ran without one": nil,
		"it carried no byte: dial":   {Err: "dial: connection refused"},
	} {
		m = Measurement{}
		streamFigures(&m, tl(s), down, up, FlapBound)
		if _, ok := m.Extra[results.StreamResumed]; ok || !strings.HasPrefix(m.Method, streamNotMeasured+name) {
			t.Errorf("%s: %+v, want no stream figures and the reason", name, m)
		}
	}
}

// TestFlapDeclaresRecoveryFigures: the flap declares every figure the
// report's Recovery table reads, under results' names, and the ones a run
// not back within the bound leaves as lower bounds say so.
func TestFlapDeclaresRecoveryFigures(t *testing.T) {
	declared := map[string]results.Metric{}
	for _, m := range (Flap{Down: 5 * time.Second}).Metrics() {
		declared[m.Key] = m
	}
	for key, censoredBy := range map[string]string{
		"value": results.AtLeastKey("value"), results.RecoveryLost: results.AtLeastKey("value"), results.RecoveryDials: "",
		results.SessionSurvived: "", results.StreamResumed: "", results.StreamGapSec: results.AtLeastKey(results.StreamGapSec),
	} {
		m, ok := declared[key]
		if !ok || m.CensoredBy != censoredBy {
			t.Errorf("%s: declared %v, censored by %q; want censored by %q", key, ok, m.CensoredBy, censoredBy)
		}
	}
}
