package instrument

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/twnsbench/twnsbench/nsbench/manyrr"
)

// parseManyRR reads the many-rr client's JSON Report, which must be of
// conns connections.
func parseManyRR(out []byte, conns int) (manyrr.Report, error) {
	var r manyrr.Report
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%s: unreadable report (%v): %s", manyrr.ClientArg, err, parseDescribe(out))
	}
	switch {
	case r.Conns != conns || len(r.Transactions) != conns:
		return r, fmt.Errorf("%s: report of %d connections with %d counts, want %d", manyrr.ClientArg, r.Conns, len(r.Transactions), conns)
	case !(r.DurationSec > 0):
		return r, fmt.Errorf("%s: report's duration %g s", manyrr.ClientArg, r.DurationSec)
	case r.MeanUs < 0 || r.P50Us < 0 || r.P90Us < r.P50Us || r.P99Us < r.P90Us || r.P999Us < r.P99Us:
		return r, fmt.Errorf("%s: latencies out of order: p50 %g, p90 %g, p99 %g, p99.9 %g µs", manyrr.ClientArg, r.P50Us, r.P90Us, r.P99Us, r.P999Us)
	case len(r.InFlightUs) > conns:
		return r, fmt.Errorf("%s: %d transactions in flight on %d connections", manyrr.ClientArg, len(r.InFlightUs), conns)
	case len(r.AtLeast) > 0 && len(r.InFlightUs) == 0:
		return r, fmt.Errorf("%s: lower bounds %v without a transaction in flight", manyrr.ClientArg, r.AtLeast)
	}
	for _, w := range r.InFlightUs {
		if !(w > 0) || math.IsInf(w, 0) {
			return r, fmt.Errorf("%s: a censored wait of %g µs", manyrr.ClientArg, w)
		}
	}
	for _, k := range r.AtLeast {
		if !slices.Contains([]string{"mean_us", "p50_us", "p90_us", "p99_us", "p999_us"}, k) {
			return r, fmt.Errorf("%s: a lower bound of unknown figure %q", manyrr.ClientArg, k)
		}
	}
	return r, nil
}

// manyRRRates are a report's rates.
type manyRRRates struct {
	Total   float64 // transactions/s of all connections
	PerConn float64 // Total / connections
	MinConn float64 // the slowest connection's transactions/s
	Jain    float64 // (Σx)² / (n·Σx²) of the connections' counts; 1 = equal
}

func manyRRFigures(r manyrr.Report) manyRRRates {
	var sum, sq float64
	minN := math.Inf(1)
	for _, n := range r.Transactions {
		x := float64(n)
		sum, sq, minN = sum+x, sq+x*x, min(minN, x)
	}
	f := manyRRRates{Total: sum / r.DurationSec, MinConn: minN / r.DurationSec}
	f.PerConn = f.Total / float64(len(r.Transactions))
	if sq > 0 {
		f.Jain = sum * sum / (float64(len(r.Transactions)) * sq)
	}
	return f
}
