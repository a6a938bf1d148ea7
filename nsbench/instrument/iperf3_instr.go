package instrument

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// IPerf3Instr is a fixed transfer (`-n`) from server to client at a fixed
// offered rate (`-b`), with the tunnel's sending daemon run under valgrind
// (transport.Target.Instructions): the instructions it executed per byte
// it sent into the tunnel. A count, unlike CPU time, does not move with
// the host's other load; valgrind makes the daemon tens of times slower,
// so the rate is low enough for it to keep up. Its value is the packet
// path's instructions per byte (the tunnel's own packet and crypto
// functions, callgrind's per-function counts), which repeated within
// 0.06 % by hand; the whole daemon's count (the Go runtime's scheduler
// and the UDP bind's batching included) moves by a few percent with how
// packets happen to batch, and is kept beside it.
type IPerf3Instr struct {
	Bytes   uint64
	RateBps uint64
}

var _ Instrument = IPerf3Instr{}

// DefaultInstr is what IPerf3Instr moves: 10 MiB at 20 Mbit/s, about
// 4 s, which wireguard-go under callgrind carried on the 2-vCPU
// development host beside other work.
var DefaultInstr = IPerf3Instr{Bytes: 10 << 20, RateBps: 20_000_000}

// InstrName is IPerf3Instr's instrument name.
const InstrName = "iperf3-instr"

// InstrMinEffect is the two-builds verdict's min effect for the packet
// path's count when the run names none: its A/A runs resolved 1.0–1.4 %
// in 12 pairs (docs/builds.md), so the default 5 % would leave a 2–5 %
// change of the daemon's work undecided.
const InstrMinEffect = 0.02

func (IPerf3Instr) Name() string { return InstrName }
func (IPerf3Instr) Tool() string { return "iperf3" }

func (i IPerf3Instr) Metrics() []results.Metric {
	return []results.Metric{
		{Key: "value", Label: "tunnel's packet-path instructions per byte sent, " + i.load(), Unit: "instr/B", Better: results.BetterLower, MinEffect: InstrMinEffect},
		// Not a decision: it follows timing by several percent (the Go
		// scheduler, the UDP bind's batching), and a two-builds run that
		// waited for it to decide would run to its last round.
		{Key: results.DaemonInstrPerByte, Label: "tunnel daemon's instructions per byte sent (all of them), " + i.load(), Unit: "instr/B"},
	}
}

// load is the transfer in words: "10 MiB at 20 Mbit/s".
func (i IPerf3Instr) load() string {
	return strconv.FormatFloat(float64(i.Bytes)/(1<<20), 'f', -1, 64) + " MiB at " +
		strconv.FormatFloat(float64(i.RateBps)/1e6, 'f', -1, 64) + " Mbit/s"
}

func (IPerf3Instr) Needs() Needs {
	n := IPerf3{}.Needs()
	n.Instructions = true
	return n
}

func (i IPerf3Instr) Measure(ctx context.Context, job *Job) (Measurement, error) {
	counter := job.Target.Instructions
	if counter == nil {
		return Measurement{}, fmt.Errorf("%s: %w", InstrName, errNotCounted)
	}
	if err := counter.Start(ctx); err != nil {
		return Measurement{}, fmt.Errorf("start counting: %w", err)
	}
	r, res, err := runIperf3(ctx, job, i.Args(job), parseIperf3)
	n, cerr := counter.Stop(ctx)
	if err != nil {
		return Measurement{}, err
	}
	if cerr != nil {
		return Measurement{}, fmt.Errorf("stop counting: %w", cerr)
	}
	if r.ReceivedBytes <= 0 || n.SentBytes == 0 {
		return Measurement{}, nothing("iperf3 -n %d: the client received %d bytes, the tunnel's device sent %d", i.Bytes, r.ReceivedBytes, n.SentBytes)
	}
	if n.Path == 0 {
		return Measurement{}, fmt.Errorf("valgrind counted %d instructions but named none of the packet path's functions (a daemon without a symbol table?)", n.Total)
	}
	m := goodput(r, res)
	m.Value, m.Unit = float64(n.Path)/float64(n.SentBytes), "instr/B"
	m.Extra[results.DaemonInstrPerByte] = float64(n.Total) / float64(n.SentBytes)
	m.Extra[results.InstrSentBytes] = float64(n.SentBytes)
	m.Method = n.Method
	return m, nil
}

// Budget is the transfer's time at the offered rate, and a few seconds for
// valgrind's controls (each reaches the daemon through vgdb, ~0.3 s).
func (i IPerf3Instr) Budget(*Job) Budget {
	d := time.Duration(float64(i.Bytes*8)/float64(i.RateBps)*float64(time.Second)) + 3*time.Second
	return Budget{Planned: d, Basis: i.load() + " and valgrind's controls"}
}

// Args is the tool's command line after the program name. Paced by the
// kernel too (--fq-rate: the socket's pacing rate), TCP hands the tunnel
// its data in packets of the same size sample after sample; paced by
// iperf3 alone (-b: 128 KiB writes when it falls behind) their number
// changed by up to 1.8 times between samples, and with it the daemon's
// work per byte (0.18 % spread of the packet path's count, against 0.06 %
// with both, 10 and 8 samples by hand).
func (i IPerf3Instr) Args(job *Job) []string {
	return []string{"-c", job.Target.Host, "-p", strconv.Itoa(job.Target.Port(transport.ServiceIPerf3)),
		"-R", "-n", strconv.FormatUint(i.Bytes, 10), "-b", strconv.FormatUint(i.RateBps, 10),
		"--fq-rate", strconv.FormatUint(i.RateBps, 10), "-J"}
}

// Instr is the counted-instructions set (--instruments instr). It is not
// in All: it needs valgrind and the tunnel's daemon under it, tens of
// times slower, on paths of its own (a run brings them up in blocks of
// their own, after the other instruments' blocks).
func Instr() []Instrument { return []Instrument{DefaultInstr} }
