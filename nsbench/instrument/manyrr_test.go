package instrument

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/manyrr"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

func TestManyRRFigures(t *testing.T) {
	for _, tc := range []struct {
		counts []int
		sec    float64
		want   manyRRRates
	}{
		// Equal shares: index 1.
		{[]int{100, 100, 100, 100}, 2, manyRRRates{Total: 200, PerConn: 50, MinConn: 50, Jain: 1}},
		// One connection of four does all the work: index 1/n.
		{[]int{400, 0, 0, 0}, 4, manyRRRates{Total: 100, PerConn: 25, MinConn: 0, Jain: 0.25}},
		// (1+2+3)² / (3·(1+4+9)) = 36/42.
		{[]int{1, 2, 3}, 1, manyRRRates{Total: 6, PerConn: 2, MinConn: 1, Jain: 36.0 / 42}},
	} {
		got := manyRRFigures(manyrr.Report{Conns: len(tc.counts), DurationSec: tc.sec, Transactions: tc.counts})
		if math.Abs(got.Total-tc.want.Total) > 1e-9 || math.Abs(got.PerConn-tc.want.PerConn) > 1e-9 ||
			math.Abs(got.MinConn-tc.want.MinConn) > 1e-9 || math.Abs(got.Jain-tc.want.Jain) > 1e-9 {
			t.Errorf("%v in %g s: got %+v want %+v", tc.counts, tc.sec, got, tc.want)
		}
	}
}

const manyRROut = `{"conns":2,"duration_sec":2,"transactions":[3000,1000],"mean_us":500.5,"p50_us":400,"p90_us":1200,"p99_us":1900,"p999_us":2500}` + "\n"

func TestManyRRMeasure(t *testing.T) {
	env, argv := replayOutput([]byte(manyRROut), 0)
	m, err := ManyRR{Conns: 2}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(*argv, " "); got != "twnsbench many-rr-client --addr 10.77.0.4:12870 --conns 2 --duration 10s" {
		t.Errorf("argv = %s", got)
	}
	// 4000 transactions in 2 s; shares 3:1 → (4000)² / (2·(9e6+1e6)) = 0.8.
	if m.Value != 2000 || m.Unit != "trans/s" || *m.P50Us != 400 || *m.P99Us != 1900 || *m.MeanUs != 500.5 ||
		m.Extra["per_conn_tps"] != 1000 || m.Extra["p90_us"] != 1200 || m.Extra["p999_us"] != 2500 || math.Abs(m.Extra["jain"]-0.8) > 1e-12 || m.Extra["min_conn_tps"] != 500 {
		t.Errorf("measurement %+v extra %v", m, m.Extra)
	}
	env, _ = replayOutput([]byte(`{"conns":2,"duration_sec":2,"transactions":[0,0],"mean_us":0,"p50_us":0,"p90_us":0,"p99_us":0,"p999_us":0}`), 0)
	if _, err := (ManyRR{Conns: 2}).Measure(context.Background(), env); !errors.Is(err, ErrNothingMeasured) {
		t.Errorf("no transactions: %v", err)
	}
}

// TestManyRRMeasureCensored: a transaction still in flight after the
// test is a censored reading: the sample's quantiles it reaches are lower
// bounds (each declared metric's CensoredBy), with the wait and the count.
func TestManyRRMeasureCensored(t *testing.T) {
	env, _ := replayOutput([]byte(`{"conns":2,"duration_sec":2,"transactions":[3000,0],"mean_us":1000,"p50_us":400,"p90_us":1200,"p99_us":1900,"p999_us":3000000,`+
		`"in_flight_us":[3000000],"at_least":["mean_us","p999_us"]}`), 0)
	m, err := ManyRR{Conns: 2}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if m.Extra["in_flight"] != 1 || m.Extra[results.CensoredWaitMs] != 3000 || m.Extra[results.AtLeastKey("p999_us")] != 1 ||
		m.Extra[results.AtLeastKey("mean_us")] != 1 || m.Extra[results.AtLeastKey("p99_us")] != 0 {
		t.Errorf("censored extras %v", m.Extra)
	}
	by := map[string]string{}
	for _, d := range (ManyRR{Conns: 2}).Metrics() {
		by[d.Key] = d.CensoredBy
	}
	if by["p99_us"] != "p99_us_at_least" || by["p999_us"] != "p999_us_at_least" || by["value"] != "" {
		t.Errorf("declared censored_by: %v", by)
	}
}

func TestParseManyRRErrors(t *testing.T) {
	for _, tc := range []struct{ out, want string }{
		{"", "unreadable report"},
		{"twnsbench many-rr-client: connection 1 of 50: dial tcp: connection refused\n", "unreadable report"},
		{`{"conns":3,"duration_sec":2,"transactions":[1,2,3],"mean_us":1,"p50_us":1,"p90_us":1.5,"p99_us":2,"p999_us":3}`, "report of 3 connections with 3 counts, want 2"},
		{`{"conns":2,"duration_sec":2,"transactions":[1],"mean_us":1,"p50_us":1,"p90_us":1.5,"p99_us":2,"p999_us":3}`, "with 1 counts, want 2"},
		{`{"conns":2,"duration_sec":0,"transactions":[1,2],"mean_us":1,"p50_us":1,"p90_us":1.5,"p99_us":2,"p999_us":3}`, "duration 0 s"},
		{`{"conns":2,"duration_sec":2,"transactions":[1,2],"mean_us":1,"p50_us":5,"p90_us":4,"p99_us":6,"p999_us":7}`, "latencies out of order"},
		{`{"conns":2,"duration_sec":2,"transactions":[1,2],"mean_us":1,"p50_us":1,"p90_us":3,"p99_us":2,"p999_us":3}`, "latencies out of order"},
		{`{"conns":2,"duration_sec":2,"transactions":[1,2],"p50":1}`, "unknown field"},
		{`{"conns":2,"duration_sec":2,"transactions":[1,2],"mean_us":1,"p50_us":1,"p90_us":1.5,"p99_us":2,"p999_us":3,"in_flight_us":[5,5,5]}`, "3 transactions in flight on 2"},
		{`{"conns":2,"duration_sec":2,"transactions":[1,2],"mean_us":1,"p50_us":1,"p90_us":1.5,"p99_us":2,"p999_us":3,"at_least":["p99_us"]}`, "without a transaction in flight"},
		{`{"conns":2,"duration_sec":2,"transactions":[1,2],"mean_us":1,"p50_us":1,"p90_us":1.5,"p99_us":2,"p999_us":3,"in_flight_us":[0]}`, "censored wait of 0"},
		{`{"conns":2,"duration_sec":2,"transactions":[1,2],"mean_us":1,"p50_us":1,"p90_us":1.5,"p99_us":2,"p999_us":3,"in_flight_us":[5],"at_least":["max"]}`, "unknown figure"},
	} {
		if _, err := parseManyRR([]byte(tc.out), 2); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.out, err, tc.want)
		}
	}
}
