package rpm

import (
	"math"
	"slices"
)

// The draft's test parameters, at its defaults
// (draft-ietf-ippm-responsiveness-08, "Test Parameters"; ID is in client.go).
const (
	MAD = 4    // Moving Average Distance: intervals in a moving average and in a stability check
	TMP = 95   // Trimmed Mean Percentage: the percentage of each probe time set kept (the slowest 5 % dropped)
	SDT = 0.05 // Standard Deviation Tolerance for stability
	INP = 1    // Initial number of load-generating connections (per direction)
	INC = 1    // load-generating connections added per interval (per direction)
	MNP = 16   // Maximum number of parallel load-generating connections (per direction)
	MPS = 100  // Maximum responsiveness probes per second (pairs of a foreign and a self probe)
	PTC = 0.05 // Percentage of Total Capacity the probes may use
	// PairBytes is the draft's estimate of one foreign probe (5000 bytes)
	// and one self probe (1000 bytes) on the wire.
	PairBytes = 6000
)

// Components are a set of probes' aggregated times (ms): the foreign
// probes' TCP handshake (tcp_f), TLS handshake per round trip (tls_f) and
// HTTP GET (http_f), and the self probes' GET (http_l).
type Components struct {
	TCPf  float64 `json:"tcp_f_ms"`
	TLSf  float64 `json:"tls_f_ms"`
	HTTPf float64 `json:"http_f_ms"`
	HTTPl float64 `json:"http_l_ms"`
}

// Probes are the probe times (ms) of one window.
type Probes struct {
	TCPf, TLSf, HTTPf, HTTPl []float64
}

// Aggregate is each set's single-sided trimmed mean at TMP, or with p90
// each set's 90th percentile (the draft's p90 variant, as networkQuality
// reports it); ok is false when a set is empty.
func (p Probes) Aggregate(p90 bool) (c Components, ok bool) {
	f := TrimmedMean
	if p90 {
		f = func(xs []float64) float64 { return Quantile(xs, 0.9) }
	}
	if len(p.TCPf) == 0 || len(p.TLSf) == 0 || len(p.HTTPf) == 0 || len(p.HTTPl) == 0 {
		return c, false
	}
	return Components{TCPf: f(p.TCPf), TLSf: f(p.TLSf), HTTPf: f(p.HTTPf), HTTPl: f(p.HTTPl)}, true
}

// Foreign is the foreign responsiveness: 60000 / ((TM(tcp_f) + TM(tls_f) +
// TM(http_f)) / 3).
func (c Components) Foreign() float64 { return 60000 / ((c.TCPf + c.TLSf + c.HTTPf) / 3) }

// Loaded is the responsiveness on the load-generating connections:
// 60000 / TM(http_l).
func (c Components) Loaded() float64 { return 60000 / c.HTTPl }

// RPM is the draft's responsiveness (TLS-enabled case): the mean of the
// foreign and the loaded responsiveness, in round trips per minute.
func (c Components) RPM() float64 { return (c.Foreign() + c.Loaded()) / 2 }

// TrimmedMean is the single-sided trimmed mean at TMP: the mean of the
// fastest ⌈n·95/100⌉ values, so that no more than 5 % are dropped (21
// probes keep 20, 20 keep 19, fewer than 20 keep all); 0 for none.
func TrimmedMean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	keep := (len(s)*TMP + 99) / 100
	var sum float64
	for _, x := range s[:keep] {
		sum += x
	}
	return sum / float64(keep)
}

// Quantile is the q-quantile by the nearest rank: the smallest value with
// at least q of them at or below it; 0 for none.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	i := int(math.Ceil(float64(len(s))*q)) - 1
	return s[max(0, min(i, len(s)-1))]
}

// MovingAverage is the moving average of per-interval values at the last
// interval: the mean of the last MAD of them (of all while fewer).
func MovingAverage(perInterval []float64) float64 {
	w := perInterval[max(0, len(perInterval)-MAD):]
	var sum float64
	for _, x := range w {
		sum += x
	}
	return sum / float64(len(w))
}

// Stable is the draft's stopping rule over a series of moving averages
// (goodput) or responsiveness values: there are at least MAD of them and
// the standard deviation of the last MAD is within SDT of the last.
func Stable(series []float64) bool {
	if len(series) < MAD {
		return false
	}
	w := series[len(series)-MAD:]
	var mean float64
	for _, x := range w {
		mean += x
	}
	mean /= MAD
	var v float64
	for _, x := range w {
		v += (x - mean) * (x - mean)
	}
	return math.Sqrt(v/MAD) < SDT*w[MAD-1]
}

// ProbeRate is how many probe pairs per second the client launches with a
// goodput of bytesPerSec: MPS at most, and no more than PTC of the
// goodput at PairBytes a pair; at least one a second.
func ProbeRate(bytesPerSec float64) float64 {
	return max(1, min(MPS, PTC*bytesPerSec/PairBytes))
}
