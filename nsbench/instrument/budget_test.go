package instrument

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// hang is an instrument whose tool never returns until its context ends,
// as a tool through a frozen path; its budget is tiny so the test is fast.
type hang struct{ planned time.Duration }

func (hang) Name() string              { return "hang" }
func (hang) Tool() string              { return "hang" }
func (hang) Needs() Needs              { return Needs{} }
func (hang) Metrics() []results.Metric { return nil }
func (h hang) Budget(*Job) Budget      { return Budget{Planned: h.planned - Allowance, Basis: "its test"} }
func (hang) Measure(ctx context.Context, _ *Job) (Measurement, error) {
	<-ctx.Done()
	return Measurement{}, context.Cause(ctx)
}

func TestMeasureBoundedEndsAtTheDeadline(t *testing.T) {
	start := time.Now()
	_, err := MeasureBounded(context.Background(), hang{planned: 50 * time.Millisecond}, &Job{})
	var de *DeadlineError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "hang: no result 10 s after its test; killed") {
		t.Fatalf("err %v, want a DeadlineError", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v past a 50 ms deadline", took)
	}
	// The run's own cancellation is not a deadline.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := MeasureBounded(ctx, hang{planned: time.Hour}, &Job{}); errors.As(err, &de) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
}

func TestBudgets(t *testing.T) {
	job := &Job{Duration: 10 * time.Second, Copy: Copy{PayloadBytes: 256 << 20}}
	for _, tc := range []struct {
		in   Instrument
		want time.Duration
	}{
		{IPerf3{Streams: 1}, 20 * time.Second},
		{TCPRR{}, 20 * time.Second},
		{TCPCRR{}, 24 * time.Second},          // 10 s + netserver's 4 s wind-down + 10 s
		{ManyRR{Conns: 50}, 21 * time.Second}, // 10 s + 1 s drain + 10 s
		{RPM{}, 20 * time.Second},             // the client's time limit + 10 s
		{SSHSetup{}, 25 * time.Second},        // 10 s of logins + 5 s for the last + 10 s
		{UDPRate{}, 20 * time.Second},
		{Ping{}, 14 * time.Second},                              // 200 × 10 ms + 2 s + 10 s
		{RRUL{}, 27 * time.Second},                              // 5 s idle + 10 s + 2 s slack + 10 s
		{Scp{}, (256<<20)*time.Second/500_000 + 10*time.Second}, // 256 MiB at the 0.5 MB/s floor
	} {
		if got := tc.in.Budget(job).Deadline(); got.Round(time.Millisecond) != tc.want.Round(time.Millisecond) {
			t.Errorf("%s: deadline %v, want %v", tc.in.Name(), got, tc.want)
		}
	}
	// A path that showed 100 MB/s: the copy may take twice that long.
	job.ExpectedRate = 100e6
	if got, want := (Scp{}).Budget(job).Planned, time.Duration(float64(256<<20)/50e6*float64(time.Second)); got != want {
		t.Errorf("scp at a shown 100 MB/s: planned %v, want %v", got, want)
	}
	if b := (Scp{}).Budget(job); !strings.Contains(b.Basis, "256 MiB at 50 MB/s, half the slowest rate this path has shown") {
		t.Errorf("scp basis %q", b.Basis)
	}
}
