package results

import (
	"strings"
	"testing"
)

func f(v float64) *float64 { return &v }

func TestCells(t *testing.T) {
	var samples []Sample
	for i, v := range []float64{3.63, 3.65, 3.64} {
		samples = append(samples, Sample{Transport: "ssh", Condition: "lan", Instrument: "iperf3-1", Run: i + 1, Value: v})
	}
	for i := 0; i < 6; i++ {
		samples = append(samples, Sample{Transport: "ssh", Condition: "lan", Instrument: "tcp_rr", Run: i + 1,
			Value: float64(100 + i), P50Us: f(float64(20 + i)), P99Us: f(float64(80 - i))})
	}
	cells := Cells(&Document{Samples: samples})
	if len(cells) != 4 {
		t.Fatalf("got %d cells, want 4: %+v", len(cells), cells)
	}
	c := cells[0]
	if c.Instrument != "iperf3-1" || c.Metric != "value" || c.N != 3 || c.Median != 3.64 || c.Min != 3.63 || c.Max != 3.65 {
		t.Errorf("iperf3 cell: %+v", c)
	}
	if c.CI95Low != nil || c.CILow != 3.63 || c.CIHigh != 3.65 || c.CILevel != 0.75 || !strings.Contains(c.Warning, "needs at least 6") {
		t.Errorf("3 runs must not claim a 95 %% interval: %+v", c)
	}
	rr := cells[1]
	if rr.Metric != "value" || rr.N != 6 || rr.CI95Low == nil || *rr.CI95Low != 100 || *rr.CI95High != 105 || rr.Warning != "" {
		t.Errorf("tcp_rr value cell with 6 runs: %+v", rr)
	}
	if cells[2].Metric != "p50_us" || cells[2].Median != 22.5 || cells[3].Metric != "p99_us" || cells[3].Median != 77.5 {
		t.Errorf("latency cells: %+v %+v", cells[2], cells[3])
	}
}
