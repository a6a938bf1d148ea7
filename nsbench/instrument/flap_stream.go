package instrument

import (
	"time"

	"github.com/twnsbench/twnsbench/nsbench/recovery"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// streamNotMeasured starts the method of a sample whose stream gave no
// figures; the reason follows.
const streamNotMeasured = "the TCP stream beside the prober not measured: "

// streamMetrics are the figures of the stream beside the prober (the
// prober's --stream): whether the same connection carried bytes again
// after the fault, and how long it carried none.
func streamMetrics(fault string) []results.Metric {
	return []results.Metric{
		{Key: results.StreamResumed, Label: "a TCP stream through the tunnel carried bytes again on its connection after the " + fault + " (1) or not (0)",
			Unit: "streams", Better: results.BetterHigher},
		{Key: results.StreamGapSec, Label: "seconds the TCP stream carried no byte across the " + fault, Unit: "s", Better: results.BetterLower,
			CensoredBy: results.AtLeastKey(results.StreamGapSec)},
	}
}

// streamFigures adds the stream's figures to m, read from the timeline's
// stream against the fault from down to up (on the same host's clock as
// the prober's start) with the recovery's bound; a stream that measured
// nothing leaves them absent and says why in m's method.
func streamFigures(m *Measurement, t recovery.Timeline, down, up time.Time, bound time.Duration) {
	if t.Stream == nil {
		m.Method = streamNotMeasured + "the prober ran without one"
		return
	}
	start := time.Unix(0, t.StartUnixNs)
	r, err := t.Stream.Across(recovery.Fault{Start: down.Sub(start), End: up.Sub(start)}, bound)
	if err != nil {
		m.Method = streamNotMeasured + err.Error()
		return
	}
	if m.Extra == nil {
		m.Extra = map[string]float64{}
	}
	m.Extra[results.StreamResumed] = 0
	if r.Resumed {
		m.Extra[results.StreamResumed] = 1
	}
	m.Extra[results.StreamGapSec] = r.GapSec
	if r.AtLeast {
		m.Extra[results.AtLeastKey(results.StreamGapSec)] = 1
	}
	m.Series = append(m.Series, streamSeries(*t.Stream))
}

// streamSeries is the stream for the time series chart, beside the
// answered series: the Mbit/s its bytes came back at in each slice
// (recovery.StreamBin), at the slice's end (s from the prober's start).
func streamSeries(s recovery.Stream) results.Series {
	se := results.Series{Key: "stream", Unit: "Mbit/s"}
	for i, b := range s.Bins {
		se.T = append(se.T, (time.Duration(i+1) * recovery.StreamBin).Seconds())
		se.V = append(se.V, float64(b)*8/recovery.StreamBin.Seconds()/1e6)
	}
	return se
}
