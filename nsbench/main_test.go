package nsbench

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/wg"
)

func TestMain(m *testing.M) {
	impair.MaybeRunForwarder() // a WAN run starts this binary as its forwarder
	// A wireguard-go row starts this binary as `wg-userspace IFNAME`.
	if len(os.Args) == 3 && os.Args[1] == wg.UserspaceCommand {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := wg.ServeUserspace(ctx, os.Args[2])
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	nstest.Main(m)
}
