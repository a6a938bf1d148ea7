package results

// A probe left unanswered when it stopped (rrul's latency probe under the
// heaviest load) is censored: its round trip is at least the time it
// waited. Such a sample carries CensoredWaitMs, and every metric whose
// declaration names it in CensoredBy is, in that sample, a lower bound.

// CensoredWaitMs is the extra value of a sample with a censored reading:
// the longest wait of a probe left unanswered, in ms.
const CensoredWaitMs = "censored_wait_ms"

// CensoredSeries is the key of the series holding the censored waits of
// series key (each a lower bound, at its probe's send time): they are kept
// apart so that no reader takes them for readings.
func CensoredSeries(key string) string { return key + "_censored" }
