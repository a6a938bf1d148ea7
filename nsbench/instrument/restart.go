package instrument

import (
	"context"
	"fmt"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/recovery"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// Restart is a restart of one piece of the path (transport.Restarter:
// the tunnel's server side, or the relay), stopped and started again with
// the same configuration, while the prober sends its requests through the
// tunnel as in a link flap. Its value is the seconds from the piece's
// return (its Start returned: it serves again) until traffic crossed the
// tunnel again; a tunnel not back within FlapBound is "≥ FlapBound".
// Beside it, as the flap's: the requests lost from the stop until traffic
// crossed again, the connections the prober opened, whether an SSH
// session through the tunnel survived, and how long the restart itself
// took. A path whose piece cannot be restarted is not applicable.
//
// The prober's traffic crosses what the transport carries: where the
// piece is not on its way (Pure SSH, whose instruments reach the
// server's fixtures straight, restarting sshd), nothing is lost, the
// value is the first request's round trip after the restart, and the
// session is what the restart cost.
type Restart struct{ Piece transport.Piece }

var _ Instrument = Restart{}

// Restarts are the restarts of the recovery set, one per piece.
func Restarts() []Instrument {
	var ins []Instrument
	for _, p := range transport.Pieces() {
		ins = append(ins, Restart{Piece: p})
	}
	return ins
}

// restartSpan bounds a restart (Stop and Start): past it, the session's
// heartbeats have ended and its survival is not known. Seen here: under
// a second for sshd and wireguard-go, a few for the relay (its programs
// check their configurations first).
const restartSpan = 5 * time.Second

func (r Restart) Name() string { return "restart-" + string(r.Piece) }
func (Restart) Tool() string   { return recovery.ClientArg }

func (r Restart) Metrics() []results.Metric {
	of := "the " + string(r.Piece) + "'s restart"
	return append([]results.Metric{
		{Key: "value", Label: "recovery after " + of, Unit: "s", Better: results.BetterLower, CensoredBy: results.AtLeastKey("value")},
		// Not back within the bound: those of the bound's span, a lower bound.
		{Key: "lost", Label: "requests lost across " + of + " (one every 10 ms)", Unit: "requests", Better: results.BetterLower, CensoredBy: results.AtLeastKey("value")},
		{Key: "dials", Label: "connections the prober opened", Unit: "connections"},
		{Key: "session_survived", Label: "an SSH session through the tunnel kept across " + of + " (1) or lost (0)", Unit: "sessions", Better: results.BetterHigher},
		{Key: "restart", Label: "the restart itself, from the " + string(r.Piece) + "'s stop until it served again", Unit: "s"},
	}, streamMetrics(string(r.Piece)+"'s restart")...)
}

func (r Restart) Needs() Needs {
	return Needs{Services: []transport.Service{transport.ServiceManyRR, transport.ServiceSSH}, Carries: transport.CarriesTCP, Restarts: r.Piece, Fault: true}
}

// Budget is the lead, the restart's bound, the recovery's and the settle.
func (r Restart) Budget(*Job) Budget {
	d := faultLead + restartSpan + FlapBound + faultSettle
	return Budget{Planned: d, Basis: "a " + fmtSeconds(faultLead) + " lead, up to " + fmtSeconds(restartSpan) + " for the restart and " + fmtSeconds(FlapBound) + " to recover (" + fmtSeconds(d) + ")"}
}

func (r Restart) Measure(ctx context.Context, job *Job) (Measurement, error) {
	piece := job.Restarts[r.Piece]
	if piece == nil {
		return Measurement{}, fmt.Errorf("%s: the path has no %s to restart", r.Name(), r.Piece)
	}
	run := faultRun{
		probe: faultLead + restartSpan + FlapBound + faultSettle,
		// An untouched path ends the probe once the restart is surely over.
		calm:    faultLead + restartSpan + faultSettle,
		session: faultLead + restartSpan + sessionAfter,
		span:    restartSpan,
		fault: func(ctx context.Context) (time.Time, time.Time, error) {
			return restart(ctx, piece)
		},
		what: "restart of the " + string(r.Piece) + " (" + piece.What() + ")",
	}
	m, seen, err := run.measure(ctx, job)
	if err != nil {
		return m, err
	}
	m.Extra["restart"] = seen.end.Sub(seen.start).Seconds()
	// The session's heartbeats must outlast the restart to tell.
	if !seen.end.Add(sessionAfter).After(seen.sessionEnd) {
		m.Extra["session_survived"] = survivedFigure(seen.survived)
	}
	return m, nil
}

// restart stops p and starts it again, and says when the stop began and
// when the start returned, on this host's clock: on one host the
// prober's too. (Across hosts the client's clock may differ from it by
// the hosts' offset: see docs/instruments.md.)
func restart(ctx context.Context, p transport.Restarter) (stopped, started time.Time, err error) {
	stopped = time.Now()
	if err := p.Stop(ctx); err != nil {
		return stopped, time.Now(), fmt.Errorf("stop: %w", err)
	}
	if err := p.Start(ctx); err != nil {
		return stopped, time.Now(), fmt.Errorf("start again: %w", err)
	}
	return stopped, time.Now(), nil
}
