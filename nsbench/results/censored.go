package results

import (
	"slices"
	"sort"
)

// A probe left unanswered when it stopped (rrul's latency probe under the
// heaviest load) is censored: its round trip is at least the time it
// waited. Such a sample carries CensoredWaitMs, and a metric is, in that
// sample, a lower bound when the extra value its declaration names in
// CensoredBy is present (CensoredWaitMs itself, or the metric's
// AtLeastKey where the instrument knows which figures the waits reach).

// CensoredWaitMs is the extra value of a sample with a censored reading:
// the longest wait of a probe left unanswered, in ms.
const CensoredWaitMs = "censored_wait_ms"

// AtLeastKey is the extra value that marks a sample's reading of metric
// key a lower bound (1) where the instrument knows precisely which of its
// figures a censored reading reaches: a quantile of readings among which
// some are censored is exact when every censored one lies above it.
func AtLeastKey(key string) string { return key + "_at_least" }

// CensoredSeries is the key of the series holding the censored waits of
// series key (each a lower bound, at its probe's send time): they are kept
// apart so that no reader takes them for readings.
func CensoredSeries(key string) string { return key + "_censored" }

// censoredBefore are the metrics that a censored sample of a document
// written before Metric.CensoredBy holds as lower bounds: rrul's loaded
// latency (its value, loaded minus idle, with it).
var censoredBefore = map[[2]string]bool{
	{"rrul", "value"}: true, {"rrul", "loaded_p50_ms"}: true, {"rrul", "loaded_p90_ms"}: true,
	{"rrul", "loaded_p99_ms"}: true, {"rrul", CensoredWaitMs}: true,
}

// censoredBy is the extra value that makes instrument's metric m a lower
// bound in a sample holding it, or "" for a metric never censored.
func censoredBy(instrument string, m Metric) string {
	if m.CensoredBy != "" {
		return m.CensoredBy
	}
	if censoredBefore[[2]string{instrument, m.Key}] {
		return CensoredWaitMs
	}
	return ""
}

// Reading is one sample's value of a metric. AtLeast: the value is a
// lower bound of the quantity (censored), not the quantity.
type Reading struct {
	Value   float64
	AtLeast bool
}

// ValuesOf are the readings' values, bounds and all.
func ValuesOf(rs []Reading) []float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = r.Value
	}
	return xs
}

// Censored counts the readings that are lower bounds.
func Censored(rs []Reading) int {
	n := 0
	for _, r := range rs {
		if r.AtLeast {
			n++
		}
	}
	return n
}

// OrderStatAtLeast says whether x, one of the readings' order statistics
// (their min, max, or an interval's end), is a lower bound: it is exact
// only when every censored reading lies above it, for raising those
// cannot move it then; a censored reading at or below it can.
func OrderStatAtLeast(rs []Reading, x float64) bool {
	return slices.ContainsFunc(rs, func(r Reading) bool { return r.AtLeast && r.Value <= x })
}

// MedianAtLeast says whether the readings' median is a lower bound: the
// median is (the mean of) the middle order statistic(s), exact when the
// upper middle one is.
func MedianAtLeast(rs []Reading) bool {
	if Censored(rs) == 0 {
		return false
	}
	xs := ValuesOf(rs)
	sort.Float64s(xs)
	return OrderStatAtLeast(rs, xs[len(xs)/2])
}

// TCPRRFlow prefixes the metric and series keys of rrul's TCP_RR probe
// flow where it runs beside the ICMP one (a path that carries ICMP):
// "tcp_rr_loaded_p50_ms", "tcp_rr_latency_loaded", "tcp_rr_value" (its
// increase). The unprefixed keys stay the headline flow's, the probe the
// sample's Method names first (ICMP where carried, else TCP_RR), so that
// documents written before the second flow read as they did.
const TCPRRFlow = "tcp_rr_"
