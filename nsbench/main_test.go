package nsbench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/manyrr"
	"github.com/twnsbench/twnsbench/nsbench/recovery"
	"github.com/twnsbench/twnsbench/nsbench/rpm"
	"github.com/twnsbench/twnsbench/wg"
)

func TestMain(m *testing.M) {
	impair.MaybeRunForwarder() // a WAN run starts this binary as its forwarder
	impair.MaybeRunProbe()     // and as its probes
	wg.MaybeRunUserspace()     // a wireguard-go row starts this binary as `wg-userspace IFNAME`
	maybeRunAgent()            // a multi-host test starts this binary as a machine's agent
	manyrr.MaybeRun()          // and as the many-connections server and client
	rpm.MaybeRun()             // and as the Responsiveness Test server and client
	recovery.MaybeRun()        // and as the recovery prober
	nstest.Main(m)
}

// agentArg makes the test binary a machine's agent: `test-agent SCOPE
// IDLE`, or as the orchestrator starts its copy over SSH, `agent SCOPE`.
const agentArg = "test-agent"

func maybeRunAgent() {
	var idle time.Duration
	var err error
	switch {
	case len(os.Args) == 4 && os.Args[1] == agentArg:
		idle, err = time.ParseDuration(os.Args[3])
	case len(os.Args) == 3 && os.Args[1] == "agent":
	default:
		return
	}
	if err == nil {
		err = ServeAgent(context.Background(), os.Args[2], idle, os.Stdin, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
