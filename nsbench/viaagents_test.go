package nsbench

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/role"
)

// countingReader counts the lines (requests) an agent reads.
type countingReader struct {
	r     io.Reader
	lines *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for _, b := range p[:n] {
		if b == '\n' {
			c.lines.Add(1)
		}
	}
	return n, err
}

// A run on this host whose roles are reached only through agents (the
// viaAgents hook: every op, program, daemon and file of a role over the
// wire, as for a role on another host) measures what the direct run
// measures: the seam carries all of a run's work, so a role elsewhere is
// built and measured by the same code as one here. Each agent is served
// in this process over pipes (role.Agent), without bounds.
func TestLocalRunThroughAgents(t *testing.T) {
	nstest.RequireRoot(t)
	if testing.Short() {
		t.Skip("integration test (skipped by -short)")
	}
	var requests atomic.Int64
	var mu sync.Mutex
	var ends []func()
	var agents sync.WaitGroup
	viaAgents = func(ctx context.Context, _, name string) (*role.Wire, error) {
		toAgent, fromOrch := io.Pipe()
		toOrch, fromAgent := io.Pipe()
		agents.Go(func() {
			role.Agent(context.Background(), countingReader{toAgent, &requests}, fromAgent, role.AgentConfig{})
			fromAgent.Close()
		})
		mu.Lock()
		ends = append(ends, func() { fromOrch.Close() })
		mu.Unlock()
		return role.NewWire(name+" (agent in this process)", toOrch, fromOrch), nil
	}
	defer func() {
		viaAgents = nil
		for _, end := range ends {
			end()
		}
		agents.Wait()
	}()

	o := Quick()
	o.Transports = []string{"ssh", "wireguard-go"}
	o.Runs, o.Warmup = 1, 0
	o.WAN = []string{"off"}
	o.OutDir = t.TempDir()
	names := []string{"iperf3-1", "tcp_rr"}
	res := runAcross(t, o, nil, names)
	checkOneSampleEach(t, res, o.Transports, names)
	for _, s := range res.Doc.Samples {
		if s.Instrument != instrument.Ready && s.Value <= 0 {
			t.Errorf("%s/%s measured %v through the agents", s.Transport, s.Instrument, s.Value)
		}
	}
	// Every role's work crossed a wire: far more requests than roles.
	if n := requests.Load(); n < 100 {
		t.Errorf("%d requests reached the agents: the run's work did not go through them", n)
	}
	t.Logf("%d requests through the agents", requests.Load())
	if left := nstest.Residue(res.Prefix); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
