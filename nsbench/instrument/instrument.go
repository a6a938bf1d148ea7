// Package instrument runs the measuring tools in the client role and turns
// their output into one measurement each. Each tool is one file; its parser
// is a pure function beside it (parse_*.go), tested on captured output.
package instrument

import (
	"context"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// Instrument measures one thing through a transport's path.
type Instrument interface {
	// Name is the results' instrument id ("iperf3-1", "tcp_rr", "scp").
	Name() string
	// Supports returns nil, or why the instrument cannot measure through
	// this target (the report shows "—" with the reason).
	Supports(t transport.Target) error
	// Measure runs the tool once and returns its measurement. A tool error
	// comes back with the tool's own message.
	Measure(ctx context.Context, env *Env) (Measurement, error)
}

// Env is what an instrument needs for one measurement.
type Env struct {
	Target   transport.Target
	Duration time.Duration // for time-bound tools
	// Run runs a program in the client role (namespace and cgroup).
	Run func(ctx context.Context, name string, argv ...string) (proc.Result, error)
	SSH SSHClient
	// UDPRcvbufErrors, when set, reads the client namespace's cumulative
	// UDP RcvbufErrors counter (datagrams dropped for lack of buffer).
	UDPRcvbufErrors func() (uint64, error)
	// Payload is the file scp copies and its size.
	Payload      string
	PayloadBytes int64
}

// Measurement is one sample's instrument-side numbers. Optional values are
// nil when the tool does not produce them.
type Measurement struct {
	Value   float64
	Unit    string
	WallSec float64 // the tool's own run time
	MeanUs  *float64
	P50Us   *float64
	P99Us   *float64
	// PayloadBytes is set by instruments that move a known payload (scp).
	PayloadBytes *int64
	Extra        map[string]float64
}

// Default is the reference's instrument set, in its run order.
func Default() []Instrument {
	return []Instrument{IPerf3{Streams: 1}, IPerf3{Streams: 4}, TCPRR{}, Scp{}}
}

func ptr[T any](v T) *T { return &v }

func seconds(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s < 1 {
		s = 1
	}
	return itoa(s)
}
