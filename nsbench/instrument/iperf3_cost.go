package instrument

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// IPerf3Cost is one iperf3 stream from server to client at a fixed offered
// rate (`-b`), well below what the tunnel can carry: the tunnel's own CPU
// per GB at that rate (results.CostCPUPerGB), read as netperf's service
// demand is. At full speed a tunnel's batching changes with how fast it
// goes, and how fast it goes changes with the host's other load, so its
// cost per GB moves with that load; at a fixed rate every round asks the
// same work of it. Its value is the goodput, so a build that cannot reach
// the rate shows it there, and its cost cell then has no reading for that
// sample (results.BelowOfferedRate) rather than a cost at another rate.
type IPerf3Cost struct{ RateBps uint64 }

var _ Instrument = IPerf3Cost{}

// DefaultCostRateBps is the rate IPerf3Cost offers unless told otherwise
// (--cost-rate): 200 Mbit/s, under a third of what one wireguard-go
// stream carried on the 2-vCPU development host while other work loaded
// it (0.55–0.69 Gbit/s), so both builds reach it round after round.
const DefaultCostRateBps = 200_000_000

// minOfferedShare is the share of the offered rate a sample must carry
// for its cost to count as the cost at that rate: iperf3's pacing holds
// the rate within a percent or two when the path keeps up.
const minOfferedShare = 0.95

// CostName is IPerf3Cost's instrument name.
const CostName = "iperf3-cost"

func (IPerf3Cost) Name() string { return CostName }
func (IPerf3Cost) Tool() string { return "iperf3" }

func (c IPerf3Cost) Metrics() []results.Metric {
	rate := strconv.FormatFloat(float64(c.RateBps)/1e6, 'f', -1, 64) + " Mbit/s"
	return []results.Metric{
		{Key: "value", Label: "goodput at an offered " + rate, Unit: "Gbit/s", Better: results.BetterHigher},
		{Key: results.CostCPUPerGB, Label: "tunnel's own CPU per GB at an offered " + rate, Unit: "CPU-s/GB", Better: results.BetterLower},
	}
}

func (IPerf3Cost) Needs() Needs { return IPerf3{}.Needs() }

func (c IPerf3Cost) Measure(ctx context.Context, job *Job) (Measurement, error) {
	r, res, err := runIperf3(ctx, job, c.Args(job), parseIperf3)
	if err != nil {
		return Measurement{}, err
	}
	if r.ReceivedBitsPerSec <= 0 {
		return Measurement{}, nothing("iperf3 at %d bit/s reported %g bit/s: the client received %d bytes in %.1f s (the server sent %d)",
			c.RateBps, r.ReceivedBitsPerSec, r.ReceivedBytes, r.DurationSec, r.SentBytes)
	}
	m := goodput(r, res)
	m.Extra[results.OfferedGbps] = float64(c.RateBps) / 1e9
	if share := r.ReceivedBitsPerSec / float64(c.RateBps); share < minOfferedShare {
		m.Extra[results.BelowOfferedRate] = share
	}
	return m, nil
}

// Budget is the test's duration.
func (IPerf3Cost) Budget(job *Job) Budget { return timeBound(job.Duration) }

// Args is the tool's command line after the program name: IPerf3's with
// one stream, paced at the offered rate.
func (c IPerf3Cost) Args(job *Job) []string {
	return append(IPerf3{Streams: 1}.Args(job), "-b", strconv.FormatUint(c.RateBps, 10))
}

// Cost is the fixed-load cost set (--instruments cost). It is not in All:
// its cell decides a change of cost, not of speed, which a two-builds run
// asks for when it names it.
func Cost() []Instrument { return []Instrument{IPerf3Cost{RateBps: DefaultCostRateBps}} }

// WithCostRate sets the rate every IPerf3Cost of ins offers (--cost-rate),
// refusing one when none is measured.
func WithCostRate(ins []Instrument, bps uint64) ([]Instrument, error) {
	if bps == 0 {
		return nil, fmt.Errorf("rate 0: want a rate above 0")
	}
	out := slices.Clone(ins)
	found := false
	for i, in := range out {
		if _, ok := in.(IPerf3Cost); ok {
			out[i], found = IPerf3Cost{RateBps: bps}, true
		}
	}
	if !found {
		return nil, fmt.Errorf("%s is not among the instruments measured (add it to --instruments)", CostName)
	}
	return out, nil
}
