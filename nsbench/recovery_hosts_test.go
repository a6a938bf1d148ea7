package nsbench

import (
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestRecoveryAcrossHosts: the faults are made on the role's own machine.
// A 1 s flap of the client's link there (its agent takes the link down and
// up in the client's namespace on that machine): traffic through Pure SSH
// crosses again within a second, the SSH session and the stream both
// survive. The server's sshd restarted in full on its machine: the
// session through it dies, the restart itself is timed. Nothing of the
// run is left on either machine.
func TestRecoveryAcrossHosts(t *testing.T) {
	nstest.RequireRoot(t)
	if testing.Short() {
		t.Skip("integration test (skipped by -short)")
	}
	lab := remotetest.New(t, 2)
	o := Quick()
	o.Transports = []string{"ssh"}
	o.Runs, o.Duration, o.Warmup, o.WAN = 1, time.Second, 0, []string{"off"}
	o.Congestion = "host"
	o.OutDir = t.TempDir()
	o.Hosts = labHosts(t, lab)
	instruments := []string{"flap-1s", "restart-server"}
	res := runAcross(t, o, nil, instruments)
	checkOneSampleEach(t, res, o.Transports, instruments)
	for _, s := range res.Doc.Samples {
		x := s.Extra
		switch s.Instrument {
		case "flap-1s":
			t.Logf("flap-1s: back %.3f s after, %v lost, %v connections, session %v, stream resumed %v (%v s without bytes)",
				s.Value, x["lost"], x["dials"], x["session_survived"], x[results.StreamResumed], x[results.StreamGapSec])
			if s.Value <= 0 || s.Value > 1 || x[results.AtLeastKey("value")] != 0 || x["lost"] < 50 {
				t.Errorf("flap-1s: back %.3f s after (bound flag %v), %v lost: want within 1 s, the drop's requests (about 100) lost",
					s.Value, x[results.AtLeastKey("value")], x["lost"])
			}
			if x["session_survived"] != 1 || x[results.StreamResumed] != 1 {
				t.Errorf("flap-1s: session %v, stream %v: both should outlive a 1 s drop", x["session_survived"], x[results.StreamResumed])
			}
		case "restart-server":
			t.Logf("restart-server: restart %.3f s, back %.3f s after it, session %v", x["restart"], s.Value, x["session_survived"])
			if v, ok := x["session_survived"]; !ok || v != 0 || x["restart"] <= 0 {
				t.Errorf("restart-server: session %v (%v), restart %v s: want the session dead and the restart timed", v, ok, x["restart"])
			}
		}
	}
	checkNothingLeft(t, lab, res.Prefix)
}
