package instrument

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// IPerf3 is `iperf3 -c HOST -p PORT -R -t DUR -P N -J`: TCP goodput from
// server to client, in Gbit/s (end.sum_received.bits_per_second).
type IPerf3 struct{ Streams int }

var _ Instrument = IPerf3{}

func (i IPerf3) Name() string { return "iperf3-" + itoa(i.Streams) }

func (IPerf3) Supports(t transport.Target) error {
	if t.IPerf3Port == 0 {
		return fmt.Errorf("the transport carries no iperf3 port")
	}
	return nil
}

func (i IPerf3) Measure(ctx context.Context, env *Env) (Measurement, error) {
	r, res, err := runIperf3(ctx, env, i.Args(env), parseIperf3)
	if err != nil {
		return Measurement{}, err
	}
	m := Measurement{
		Value:   r.ReceivedBitsPerSec / 1e9,
		Unit:    "Gbit/s",
		WallSec: res.Wall.Seconds(),
		Extra:   map[string]float64{},
	}
	if r.HasRetransmits {
		m.Extra["retransmits"] = float64(r.Retransmits)
	}
	return m, nil
}

// Args is the tool's command line after the program name.
func (i IPerf3) Args(env *Env) []string {
	return []string{"-c", env.Target.Host, "-p", strconv.Itoa(env.Target.IPerf3Port),
		"-R", "-t", seconds(env.Duration), "-P", itoa(i.Streams), "-J"}
}

// runIperf3 runs iperf3 -J and parses its report. iperf3 reports its own
// errors inside the JSON, even with a non-zero exit: the output is parsed
// first, so the sample carries iperf3's message.
func runIperf3[T any](ctx context.Context, env *Env, args []string, parse func([]byte) (T, error)) (T, proc.Result, error) {
	res, err := env.Run(ctx, "iperf3", args...)
	r, perr := parse(res.Stdout)
	if perr != nil {
		if err != nil {
			perr = fmt.Errorf("%w (%v)", perr, err)
		}
		return r, res, perr
	}
	if err != nil {
		return r, res, fmt.Errorf("iperf3: %w: %s", err, parseFirstLine(res.Stderr))
	}
	return r, res, nil
}

func itoa(n int) string { return strconv.Itoa(n) }
