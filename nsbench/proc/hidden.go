package proc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
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

// ListenMain is the command line of a server that twnsbench runs as a
// fixture (name, a hidden subcommand): --listen HOST:PORT, then serve on
// that listener until ctx ends. It prints "NAME: listening on ADDR" and
// what, so the fixture's log says where it answers.
func ListenMain(name, what string, serve func(context.Context, net.Listener) error) func(context.Context, []string, io.Writer) error {
	return func(ctx context.Context, args []string, out io.Writer) error {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		listen := fs.String("listen", "", "host:port to listen on")
		if err := fs.Parse(args); err != nil {
			return err
		}
		if *listen == "" {
			return errors.New("--listen HOST:PORT is required")
		}
		l, err := net.Listen("tcp", *listen)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: listening on %s%s\n", name, l.Addr(), what)
		return serve(ctx, l)
	}
}
