package nsbench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/wg"
)

func TestMain(m *testing.M) {
	impair.MaybeRunForwarder() // a WAN run starts this binary as its forwarder
	impair.MaybeRunProbe()     // and as its probes
	wg.MaybeRunUserspace()     // a wireguard-go row starts this binary as `wg-userspace IFNAME`
	maybeRunAgent()            // a multi-host test starts this binary as a machine's agent
	nstest.Main(m)
}

// agentArg makes the test binary a machine's `twnsbench agent SCOPE IDLE`.
const agentArg = "test-agent"

func maybeRunAgent() {
	if len(os.Args) != 4 || os.Args[1] != agentArg {
		return
	}
	idle, err := time.ParseDuration(os.Args[3])
	if err == nil {
		err = ServeAgent(context.Background(), os.Args[2], idle, os.Stdin, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
