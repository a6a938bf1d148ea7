package instrument

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/recovery"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// Flap is a link flap: the client role's link down for Down, then up
// again (a Wi-Fi drop), while twnsbench's prober (nsbench/recovery) sends
// a small request through the tunnel to the server's many-rr echo every
// 10 ms. Its value is the seconds from the link's return until traffic
// crossed the tunnel again (the first answer after it); a tunnel not back
// within FlapBound is "≥ FlapBound", never a number. Beside it: the
// requests lost from the link's drop until traffic crossed again, and the
// connections the prober had to open (a connection stalled across the
// drop is given up after recovery.StallAfter for a new one). A TCP
// stream through the tunnel runs beside the prober from its start
// (recovery.ProbeWithStream): whether its connection carried bytes again
// after the drop, and how long it carried none (flap_stream.go).
type Flap struct{ Down time.Duration }

var _ Instrument = Flap{}

// FlapBound is how long after the link's return a recovery is awaited: a
// TCP connection stalled across a 30 s drop retransmits again within
// about 16 s of it (its backoff doubling from 200 ms), and a WireGuard
// handshake retries every 5 s.
const FlapBound = 30 * time.Second

// Flaps are the link flaps of the recovery set: a short and a long drop.
func Flaps() []Instrument {
	return []Instrument{Flap{Down: 5 * time.Second}, Flap{Down: 30 * time.Second}}
}

// flapPrefix names a flap instrument: "flap-5s" is a 5 s drop.
const flapPrefix = "flap-"

// ParseFlap reads a flap instrument's name, "flap-" and how long the
// link is down (a Go duration from 1s to role.MaxFlap: "flap-2s",
// "flap-1m30s"); ok is false for a name that is no flap's.
func ParseFlap(name string) (f Flap, ok bool, err error) {
	d, found := strings.CutPrefix(name, flapPrefix)
	if !found {
		return Flap{}, false, nil
	}
	down, err := time.ParseDuration(d)
	if err != nil || down < time.Second || down > role.MaxFlap || down%time.Second != 0 {
		return Flap{}, true, fmt.Errorf("instrument %q: a flap's drop is whole seconds from 1s to %v (flap-5s, flap-30s)", name, role.MaxFlap)
	}
	return Flap{Down: down}, true, nil
}

func (f Flap) Name() string { return flapPrefix + f.Down.String() }
func (Flap) Tool() string   { return recovery.ClientArg }

func (f Flap) Metrics() []results.Metric {
	drop := fmtSeconds(f.Down)
	return append([]results.Metric{
		{Key: "value", Label: "recovery after a " + drop + " link drop", Unit: "s", Better: results.BetterLower, CensoredBy: results.AtLeastKey("value")},
		// Not back within the bound: those of the bound's span, a lower bound.
		{Key: "lost", Label: "requests lost across the " + drop + " drop (one every 10 ms)", Unit: "requests", Better: results.BetterLower, CensoredBy: results.AtLeastKey("value")},
		{Key: "dials", Label: "connections the prober opened", Unit: "connections"},
		{Key: "session_survived", Label: "an SSH session through the tunnel kept across the " + drop + " drop (1) or lost (0)", Unit: "sessions", Better: results.BetterHigher},
	}, streamMetrics(drop+" drop")...)
}

func (Flap) Needs() Needs {
	return Needs{Services: []transport.Service{transport.ServiceManyRR, transport.ServiceSSH}, Carries: transport.CarriesTCP, Fault: true}
}

// Budget is the lead, the drop, the bound of the recovery and the settle.
func (f Flap) Budget(*Job) Budget {
	d := faultLead + f.Down + FlapBound + faultSettle
	return Budget{Planned: d, Basis: "a " + fmtSeconds(faultLead) + " lead, the " + fmtSeconds(f.Down) + " drop and up to " + fmtSeconds(FlapBound) + " to recover (" + fmtSeconds(d) + ")"}
}

func (f Flap) Measure(ctx context.Context, job *Job) (Measurement, error) {
	if job.FlapLink == nil {
		return Measurement{}, errors.New("flap: this run cannot take the client's link down here")
	}
	r := faultRun{
		probe:   faultLead + f.Down + FlapBound + faultSettle,
		session: faultLead + f.Down + sessionAfter,
		span:    f.Down,
		fault:   func(ctx context.Context) (time.Time, time.Time, error) { return job.FlapLink(ctx, f.Down) },
		what:    "link flap",
	}
	m, seen, err := r.measure(ctx, job)
	if err != nil {
		return m, err
	}
	m.Extra["session_survived"] = survivedFigure(seen.survived)
	return m, nil
}
