package instrument

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/recovery"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// fakePiece is a Restarter that records when it was stopped and started.
type fakePiece struct{ at *restartTimes }

type restartTimes struct {
	mu          sync.Mutex
	stop, start time.Time
	started     chan struct{}
	stopErr     error
	ended       []string // the connections EndConnection was asked to end
}

func (p fakePiece) Stop(context.Context) error {
	p.at.mu.Lock()
	p.at.stop = time.Now()
	p.at.mu.Unlock()
	// The stop takes this long, as a daemon's does: the fault's span
	// (requests answered just after the stop began come before its end),
	// not a wait for anything.
	time.Sleep(100 * time.Millisecond)
	return p.at.stopErr
}

func (p fakePiece) Start(context.Context) error {
	p.at.mu.Lock()
	p.at.start = time.Now()
	p.at.mu.Unlock()
	close(p.at.started)
	return nil
}

func (fakePiece) What() string { return "a fake daemon" }

// restartJob is a job whose prober answers every request but those sent
// from the piece's stop until back after its start, and whose session
// prints its connection as sshd saw it, then beats heartbeats.
func restartJob(at *restartTimes, back time.Duration, beats int) *Job {
	return &Job{
		Target: transport.DirectTarget("10.0.0.1"),
		Faults: Faults{Restarts: transport.Restarts{transport.PieceServer: fakePiece{at}},
			EndConnection: func(_ context.Context, local, remote netip.AddrPort) error {
				at.mu.Lock()
				defer at.mu.Unlock()
				at.ended = append(at.ended, local.String()+" "+remote.String())
				return nil
			}},
		Run: func(ctx context.Context, name string, argv ...string) (proc.Result, error) {
			if name != SelfTool {
				out := strings.Builder{}
				out.WriteString("10.0.0.2 40022 10.0.0.1 22\n")
				for i := range beats {
					out.WriteString(strings.Repeat("x", i%3+1) + "\n")
				}
				return proc.Result{Stdout: []byte(out.String())}, nil
			}
			t0 := time.Now()
			select {
			case <-at.started:
			case <-ctx.Done():
				return proc.Result{}, ctx.Err()
			}
			at.mu.Lock()
			from, to := at.stop.Sub(t0), at.start.Sub(t0)+back
			at.mu.Unlock()
			tl := recovery.Timeline{StartUnixNs: t0.UnixNano(), Interval: 10 * time.Millisecond, Dials: 3}
			for s := 10 * time.Millisecond; s <= to+2*time.Second; s += 10 * time.Millisecond {
				r := recovery.Request{Sent: s}
				if s < from || s >= to {
					r.Answered = s + time.Millisecond
				}
				tl.Requests = append(tl.Requests, r)
			}
			b, err := json.Marshal(tl)
			return proc.Result{Stdout: b}, err
		},
	}
}

// TestRestartMeasure: the restart's figures read against the piece's own
// stop and start: back 300 ms after the start, the requests from the
// stop on lost, the prober's connections, the session's survival from
// its heartbeats (all came: 1; one missing: 0), and a piece that did not
// stop fails the sample.
func TestRestartMeasure(t *testing.T) {
	in := Restart{Piece: transport.PieceServer}
	beats := int((faultLead + restartSpan + sessionAfter) / sessionBeat)
	at := &restartTimes{started: make(chan struct{})}
	m, err := in.Measure(context.Background(), restartJob(at, 300*time.Millisecond, beats))
	if err != nil {
		t.Fatal(err)
	}
	gap := at.start.Sub(at.stop) + 300*time.Millisecond
	wantLost := float64(gap / (10 * time.Millisecond))
	if m.Value < 0.29 || m.Value > 0.32 || m.Extra[results.AtLeastKey("value")] != 0 {
		t.Errorf("recovery %v s, want 0.30 (back 300 ms after the start)", m.Value)
	}
	if m.Extra["lost"] < wantLost-1 || m.Extra["lost"] > wantLost+1 || m.Extra["dials"] != 3 {
		t.Errorf("lost %v, dials %v; want %v lost from the stop on, 3 dials", m.Extra["lost"], m.Extra["dials"], wantLost)
	}
	if got := m.Extra["restart"]; got < 0.1 || got > at.start.Sub(at.stop).Seconds()+0.01 {
		t.Errorf("restart %v s, the piece was stopped for %v", got, at.start.Sub(at.stop))
	}
	if s, ok := m.Extra["session_survived"]; !ok || s != 1 {
		t.Errorf("session_survived %v (%v), want 1: every heartbeat came", s, ok)
	}
	if at.ended != nil {
		t.Errorf("a session that survived had its connection ended: %v", at.ended)
	}

	at = &restartTimes{started: make(chan struct{})}
	m, err = in.Measure(context.Background(), restartJob(at, 300*time.Millisecond, beats-1))
	if s, ok := m.Extra["session_survived"]; err != nil || !ok || s != 0 {
		t.Errorf("a heartbeat missing: session_survived %v (%v, %v), want 0", s, ok, err)
	}
	// The lost session's server side is ended, as the server saw it.
	if want := []string{"10.0.0.1:22 10.0.0.2:40022"}; !slices.Equal(at.ended, want) {
		t.Errorf("connections ended after a lost session: %v, want %v", at.ended, want)
	}

	at = &restartTimes{started: make(chan struct{}), stopErr: errors.New("still running")}
	if _, err := in.Measure(context.Background(), restartJob(at, 0, beats)); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Errorf("a piece that did not stop: %v", err)
	}
	if _, err := in.Measure(context.Background(), &Job{Target: transport.DirectTarget("10.0.0.1")}); err == nil {
		t.Error("a job without the piece measured")
	}
}

func TestParseSSHConnection(t *testing.T) {
	c, s, err := parseSSHConnection("10.0.0.2 40022 10.0.0.1 22")
	if err != nil || c != netip.MustParseAddrPort("10.0.0.2:40022") || s != netip.MustParseAddrPort("10.0.0.1:22") {
		t.Errorf("got %v %v %v", c, s, err)
	}
	c, _, err = parseSSHConnection("::ffff:10.0.0.2 40022 ::ffff:10.0.0.1 22")
	if err != nil || c != netip.MustParseAddrPort("10.0.0.2:40022") {
		t.Errorf("a mapped address: %v %v", c, err)
	}
	for _, bad := range []string{"", "0", "10.0.0.2 40022 10.0.0.1", "10.0.0.2 70000 10.0.0.1 22", "host 1 10.0.0.1 22", "10.0.0.2 1 10.0.0.1 x"} {
		if _, _, err := parseSSHConnection(bad); err == nil {
			t.Errorf("%q read", bad)
		}
	}
}
