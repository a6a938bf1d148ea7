package instrument

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/recovery"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// A recovery sample (a link flap, a restart) runs the prober (with its
// stream) and the heartbeat session from its start, makes its fault after
// faultLead, and reads the prober's timeline against the fault.

// faultLead is how long the prober runs before the fault: its first
// connection made and answered well before.
const faultLead = 2 * time.Second

// faultSettle ends the probe once traffic crossed again for this long.
const faultSettle = time.Second

// The session kept across a fault: ssh through the tunnel to the
// server's sshd, whose command writes a heartbeat every sessionBeat from
// before the fault until sessionAfter past it. It survived when every
// heartbeat came and ssh ended well, with no new login. Its client gives
// up after three keepalives unanswered 5 s apart, as a client set up for
// a roaming laptop does (without them a dead session would hang until
// TCP gave up, many minutes later).
const (
	sessionBeat  = 200 * time.Millisecond
	sessionAfter = 2 * time.Second
)

var sessionKeepAlive = []string{"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"}

// faultRun is one recovery sample's schedule.
type faultRun struct {
	// probe is the prober's --duration, calm its --calm (0: none).
	probe, calm time.Duration
	// span bounds the fault's length: the prober does not settle before
	// faultLead + span (--fault-by), nor on a gap before faultLead.
	span time.Duration
	// session is how long the session's heartbeats run from its start.
	session time.Duration
	// fault makes the fault and says when it began and ended, on the
	// client's host's clock.
	fault func(ctx context.Context) (start, end time.Time, err error)
	what  string // "link flap", for errors
}

// faultSeen is what a faultRun saw.
type faultSeen struct {
	timeline   recovery.Timeline
	start, end time.Time // the fault's
	// survived says whether every heartbeat came; sessionEnd is when its
	// last was due (on this host's clock).
	survived   bool
	sessionEnd time.Time
}

// run runs the prober and the session, makes the fault after faultLead,
// and waits for both.
func (r faultRun) run(ctx context.Context, job *Job) (faultSeen, error) {
	// What runs beside the fault ends with the sample, whichever way it ends.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	addr := net.JoinHostPort(job.Target.Host, strconv.Itoa(job.Target.Port(transport.ServiceManyRR)))
	type probed struct {
		out []byte
		err error
	}
	done := make(chan probed, 1)
	sess := make(chan heartbeats, 1)
	seen := faultSeen{sessionEnd: time.Now().Add(r.session)}
	go func() { sess <- session(ctx, job, r.session) }()
	go func() {
		args := []string{recovery.ClientArg, "--addr", addr, "--duration", r.probe.String(), "--settle", faultSettle.String(), "--stream",
			"--fault-from", faultLead.String(), "--fault-by", (faultLead + r.span).String()}
		if r.calm > 0 {
			args = append(args, "--calm", r.calm.String())
		}
		res, err := job.Run(ctx, SelfTool, args...)
		if err != nil {
			err = fmt.Errorf("%s: %w: %s", recovery.ClientArg, err, parseFirstLine(res.Stderr))
		}
		done <- probed{[]byte(res.Stdout), err}
	}()
	lead := time.NewTimer(faultLead) // the fault's schedule, not a wait for a condition
	select {
	case p := <-done:
		lead.Stop()
		return seen, fmt.Errorf("the prober ended before the %s: %v", r.what, p.err)
	case <-lead.C:
	}
	var ferr error
	seen.start, seen.end, ferr = r.fault(ctx)
	if ferr != nil {
		cancel() // nothing to time: the prober and the session end now
	}
	p := <-done
	hb := <-sess
	seen.survived = hb.survived
	if !hb.survived {
		endStranded(ctx, job, hb)
	}
	if ferr != nil {
		return seen, fmt.Errorf("%s: %w", r.what, ferr)
	}
	if p.err != nil {
		return seen, p.err
	}
	if err := json.Unmarshal(p.out, &seen.timeline); err != nil {
		return seen, fmt.Errorf("%s: unreadable timeline (%v): %s", recovery.ClientArg, err, parseDescribe(p.out))
	}
	return seen, nil
}

// measure runs r and reads the figures every fault has: the recovery,
// the requests lost, the connections opened and the stream's.
func (r faultRun) measure(ctx context.Context, job *Job) (Measurement, faultSeen, error) {
	seen, err := r.run(ctx, job)
	if err != nil {
		return Measurement{}, seen, err
	}
	m, err := faultFigures(seen.timeline, seen.start, seen.end, FlapBound)
	if err != nil {
		return m, seen, err
	}
	streamFigures(&m, seen.timeline, seen.start, seen.end, FlapBound)
	return m, seen, nil
}

// heartbeats is how the heartbeat session went: whether it survived, and
// its connection as the server's sshd saw it (SSH_CONNECTION), when its
// first line came.
type heartbeats struct {
	survived       bool
	client, server netip.AddrPort
}

// session runs the heartbeat session for span and says whether it
// survived (ssh's own log, in the client role's, says why not). The
// server's command first writes SSH_CONNECTION, then a heartbeat every
// sessionBeat.
func session(ctx context.Context, job *Job, span time.Duration) heartbeats {
	beats := int(span / sessionBeat)
	argv := append([]string{sshProgram(job.Target)}, job.SSH.options()...)
	argv = append(argv, sessionKeepAlive...)
	argv = append(argv, "-o", "ConnectTimeout=10", "-p", strconv.Itoa(job.Target.Port(transport.ServiceSSH)), job.SSH.User+"@"+job.Target.Host,
		fmt.Sprintf(`echo "$SSH_CONNECTION"; i=0; while [ $i -lt %d ]; do echo $i; sleep %g; i=$((i+1)); done`, beats, sessionBeat.Seconds()))
	res, err := job.Run(ctx, argv[0], argv[1:]...)
	lines := parseNonBlank([]byte(res.Stdout), 0)
	var hb heartbeats
	if len(lines) > 0 {
		hb.client, hb.server, _ = parseSSHConnection(lines[0])
		lines = lines[1:]
	}
	hb.survived = err == nil && len(lines) == beats
	return hb
}

// parseSSHConnection reads sshd's SSH_CONNECTION: "CLIENT_IP CLIENT_PORT
// SERVER_IP SERVER_PORT".
func parseSSHConnection(line string) (client, server netip.AddrPort, err error) {
	f := strings.Fields(line)
	if len(f) != 4 {
		return client, server, fmt.Errorf("SSH_CONNECTION %q: want 4 fields", line)
	}
	if client, err = netip.ParseAddrPort(net.JoinHostPort(f[0], f[1])); err != nil {
		return client, server, fmt.Errorf("SSH_CONNECTION %q: client: %w", line, err)
	}
	if server, err = netip.ParseAddrPort(net.JoinHostPort(f[2], f[3])); err != nil {
		return client, server, fmt.Errorf("SSH_CONNECTION %q: server: %w", line, err)
	}
	// sshd on a dual-stack socket writes IPv4 peers mapped (::ffff:a.b.c.d).
	return netip.AddrPortFrom(client.Addr().Unmap(), client.Port()), netip.AddrPortFrom(server.Addr().Unmap(), server.Port()), nil
}

// endStrandedBound bounds ending a lost session's server side.
const endStrandedBound = 5 * time.Second

// endStranded ends, on the server, the connection of a heartbeat session
// the fault broke. Its client has given up, but the server's sshd still
// holds the connection with heartbeats queued, retrying them on a backoff
// the outage grew (tens of seconds): the next sample's quiet wait would
// wait for that instead of measuring. What it cannot end, that wait still
// bounds and names; the sample's figures are already read.
func endStranded(ctx context.Context, job *Job, hb heartbeats) {
	if job.EndConnection == nil || !hb.client.IsValid() || !hb.server.IsValid() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, endStrandedBound)
	defer cancel()
	_ = job.EndConnection(ctx, hb.server, hb.client)
}

// faultFigures reads the timeline against the fault (start, end on the
// same host's clock as the prober's start): the recovery within bound,
// the requests lost, the connections opened, and the timeline's series.
func faultFigures(t recovery.Timeline, start, end time.Time, bound time.Duration) (Measurement, error) {
	t0 := time.Unix(0, t.StartUnixNs)
	fault := recovery.Fault{Start: start.Sub(t0), End: end.Sub(t0)}
	before := 0
	for _, r := range t.Requests {
		if r.OK() && r.Answered < fault.Start {
			before++
		}
	}
	if before == 0 {
		return Measurement{}, nothing("%s: no request answered before the fault: the path carried nothing to recover", recovery.ClientArg)
	}
	r, err := recovery.Recover(t, fault, bound)
	if err != nil {
		return Measurement{}, err
	}
	extra := map[string]float64{"lost": float64(r.Lost), "dials": float64(t.Dials)}
	if r.AtLeast {
		extra[results.AtLeastKey("value")] = 1
	}
	return Measurement{Value: r.Seconds, Unit: "s", Extra: extra, Series: []results.Series{answeredSeries(t)}}, nil
}

// answeredBin is the width of the timeline's slices in the answered
// series.
const answeredBin = 100 * time.Millisecond

// answeredSeries is the timeline for the time series chart: the share of
// the requests sent in each 100 ms that were answered, at the slice's end
// (s from the prober's start); a slice with nothing sent has no point.
func answeredSeries(t recovery.Timeline) results.Series {
	s := results.Series{Key: "answered", Unit: "%"}
	for _, b := range recovery.Bins(t, answeredBin) {
		if b.Sent == 0 {
			continue
		}
		s.T = append(s.T, (b.Start + answeredBin).Seconds())
		s.V = append(s.V, 100*float64(b.AnsweredSent)/float64(b.Sent))
	}
	return s
}

// survivedFigure is session_survived: 1 or 0.
func survivedFigure(ok bool) float64 {
	if ok {
		return 1
	}
	return 0
}
