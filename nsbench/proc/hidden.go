package proc

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// MaybeRunHidden runs main and exits when this process was started as the
// hidden subcommand arg (os.Args[1] == arg); otherwise it returns at once.
// SIGTERM and SIGINT end main's context. Test binaries that a run starts
// as one of its own parts call it first thing in TestMain.
func MaybeRunHidden(arg string, main func(context.Context, []string, io.Writer) error) {
	if len(os.Args) < 2 || os.Args[1] != arg {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := main(ctx, os.Args[2:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "twnsbench %s: %v\n", arg, err)
		os.Exit(1)
	}
	os.Exit(0)
}
