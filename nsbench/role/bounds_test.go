package role

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// testHostOp is a host op no bounded agent is told to serve.
var testHostOp = NewHostOp("host.test-unlisted", func(context.Context, Nothing) (string, error) { return "ran", nil })

// A bounded agent carries out in its host's namespace the host ops its
// bounds name and no other; an unbounded one (a test's) any.
func TestBoundedAgentServesOnlyListedHostOps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, b := range []*Bounds{{Scope: "twnsb-abc123-client"}, nil} {
		toAgent, fromOrch := io.Pipe()
		toOrch, fromAgent := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- Agent(ctx, toAgent, fromAgent, AgentConfig{Bounds: b})
			fromAgent.Close()
		}()
		w := NewWire("test host", toOrch, fromOrch)
		got, err := testHostOp.On(ctx, w, Nothing{})
		switch {
		case b != nil && (err == nil || !strings.Contains(err.Error(), "not one this agent carries out")):
			t.Errorf("bounded agent, unlisted host op: %q, %v; want a refusal", got, err)
		case b == nil && (err != nil || got != "ran"):
			t.Errorf("unbounded agent, host op: %q, %v; want it carried out", got, err)
		}
		// A listed one is carried out (its own checks aside).
		if _, err := HostNoise(ctx, w, "twnsb-abc123"); err != nil {
			t.Errorf("bounds %v: host.noise of its own run: %v", b, err)
		}
		fromOrch.Close()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}
}
