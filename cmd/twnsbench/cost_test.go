package main

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// --cost-rate is refused, exit 2 and one line, when it cannot be read or
// no iperf3-cost is measured.
func TestCostRateRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--instruments", "iperf3-1", "--cost-rate", "100mbit"}, "--cost-rate: iperf3-cost is not among the instruments measured"},
		{[]string{"--instruments", "iperf3-cost", "--cost-rate", "fast"}, `--cost-rate: rate "fast": want a number`},
	} {
		code, _, stderr := runInProcess(append([]string{"run", "--transports", "ssh", "--wan", "off", "--out", t.TempDir()}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// rerun offers the rate the file's iperf3-cost samples offered.
func TestCostRateOfDocument(t *testing.T) {
	doc := &results.Document{Samples: []results.Sample{
		{Instrument: "iperf3-1", Extra: map[string]float64{}},
		{Instrument: instrument.CostName, Extra: map[string]float64{results.OfferedGbps: 0.15}},
	}}
	if bps, ok := costRate(doc); !ok || bps != 150_000_000 {
		t.Errorf("rate %d, %v; want 150000000", bps, ok)
	}
	if _, ok := costRate(&results.Document{}); ok {
		t.Error("a document without iperf3-cost has a rate")
	}
}
