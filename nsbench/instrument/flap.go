package instrument

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
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

// flapLead is how long the prober runs before the link goes down: its
// first connection made and answered well before.
const flapLead = 2 * time.Second

// flapSettle ends the probe once traffic crossed again for this long.
const flapSettle = time.Second

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

// The session kept across a drop: ssh through the tunnel to the server's
// sshd, whose command writes a heartbeat every sessionBeat from before the
// drop until sessionAfter past it. It survived when every heartbeat came
// and ssh ended well, with no new login. Its client gives up after three
// keepalives unanswered 5 s apart, as a client set up for a roaming laptop
// does (without them a dead session would hang until TCP gave up, many
// minutes later).
const (
	sessionBeat  = 200 * time.Millisecond
	sessionAfter = 2 * time.Second
)

var sessionKeepAlive = []string{"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"}

// session runs the heartbeat session for the drop and says whether it
// survived (ssh's own log, in the client role's, says why not).
func (f Flap) session(ctx context.Context, job *Job) bool {
	beats := int((flapLead + f.Down + sessionAfter) / sessionBeat)
	argv := append([]string{sshProgram(job.Target)}, job.SSH.options()...)
	argv = append(argv, sessionKeepAlive...)
	argv = append(argv, "-o", "ConnectTimeout=10", "-p", strconv.Itoa(job.Target.Port(transport.ServiceSSH)), job.SSH.User+"@"+job.Target.Host,
		fmt.Sprintf("i=0; while [ $i -lt %d ]; do echo $i; sleep %g; i=$((i+1)); done", beats, sessionBeat.Seconds()))
	res, err := job.Run(ctx, argv[0], argv[1:]...)
	return err == nil && len(parseNonBlank([]byte(res.Stdout), 0)) == beats
}

func (Flap) Needs() Needs {
	return Needs{Services: []transport.Service{transport.ServiceManyRR, transport.ServiceSSH}, Carries: transport.CarriesTCP}
}

// Budget is the lead, the drop, the bound of the recovery and the settle.
func (f Flap) Budget(*Job) Budget {
	d := flapLead + f.Down + FlapBound + flapSettle
	return Budget{Planned: d, Basis: "a " + fmtSeconds(flapLead) + " lead, the " + fmtSeconds(f.Down) + " drop and up to " + fmtSeconds(FlapBound) + " to recover (" + fmtSeconds(d) + ")"}
}

func (f Flap) Measure(ctx context.Context, job *Job) (Measurement, error) {
	if job.FlapLink == nil {
		return Measurement{}, errors.New("flap: this run cannot take the client's link down here")
	}
	// What runs beside the drop ends with the sample, whichever way it ends.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	total := flapLead + f.Down + FlapBound + flapSettle
	addr := net.JoinHostPort(job.Target.Host, strconv.Itoa(job.Target.Port(transport.ServiceManyRR)))
	type probed struct {
		out []byte
		err error
	}
	done := make(chan probed, 1)
	sess := make(chan bool, 1)
	go func() { sess <- f.session(ctx, job) }()
	go func() {
		res, err := job.Run(ctx, SelfTool, recovery.ClientArg, "--addr", addr, "--duration", total.String(), "--settle", flapSettle.String(), "--stream")
		if err != nil {
			err = fmt.Errorf("%s: %w: %s", recovery.ClientArg, err, parseFirstLine(res.Stderr))
		}
		done <- probed{[]byte(res.Stdout), err}
	}()
	lead := time.NewTimer(flapLead) // the fault's schedule, not a wait for a condition
	select {
	case p := <-done:
		lead.Stop()
		return Measurement{}, fmt.Errorf("the prober ended before the drop: %v", p.err)
	case <-lead.C:
	}
	down, up, ferr := job.FlapLink(ctx, f.Down)
	p := <-done
	k := <-sess
	if ferr != nil {
		return Measurement{}, fmt.Errorf("link flap: %w", ferr)
	}
	if p.err != nil {
		return Measurement{}, p.err
	}
	var t recovery.Timeline
	if err := json.Unmarshal(p.out, &t); err != nil {
		return Measurement{}, fmt.Errorf("%s: unreadable timeline (%v): %s", recovery.ClientArg, err, parseDescribe(p.out))
	}
	m, err := flapFigures(t, down, up)
	if err != nil {
		return m, err
	}
	streamFigures(&m, t, down, up, FlapBound)
	m.Extra["session_survived"] = 0
	if k {
		m.Extra["session_survived"] = 1
	}
	return m, nil
}

// flapFigures reads the timeline against the drop (down, up on the same
// host's clock as the prober's start).
func flapFigures(t recovery.Timeline, down, up time.Time) (Measurement, error) {
	start := time.Unix(0, t.StartUnixNs)
	fault := recovery.Fault{Start: down.Sub(start), End: up.Sub(start)}
	before := 0
	for _, r := range t.Requests {
		if r.OK() && r.Answered < fault.Start {
			before++
		}
	}
	if before == 0 {
		return Measurement{}, nothing("%s: no request answered before the drop: the path carried nothing to recover", recovery.ClientArg)
	}
	r, err := recovery.Recover(t, fault, FlapBound)
	if err != nil {
		return Measurement{}, err
	}
	extra := map[string]float64{"lost": float64(r.Lost), "dials": float64(t.Dials)}
	if r.AtLeast {
		extra[results.AtLeastKey("value")] = 1
	}
	return Measurement{Value: r.Seconds, Unit: "s", Extra: extra, Series: []results.Series{answeredSeries(t)}}, nil
}

// flapBin is the width of the timeline's slices in the answered series.
const flapBin = 100 * time.Millisecond

// answeredSeries is the timeline for the time series chart: the share of
// the requests sent in each 100 ms that were answered, at the slice's end
// (s from the prober's start); a slice with nothing sent has no point.
func answeredSeries(t recovery.Timeline) results.Series {
	s := results.Series{Key: "answered", Unit: "%"}
	for _, b := range recovery.Bins(t, flapBin) {
		if b.Sent == 0 {
			continue
		}
		s.T = append(s.T, (b.Start + flapBin).Seconds())
		s.V = append(s.V, 100*float64(b.AnsweredSent)/float64(b.Sent))
	}
	return s
}
