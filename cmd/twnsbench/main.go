// Command twnsbench benchmarks tunnel transports in Linux network
// namespaces, on one host or with its roles on several (--host):
// `sudo twnsbench run`.
//
// Its exit codes are the exit… constants below; docs/exit-codes.md says
// what each means for every command (TestExitCodeTable keeps the two
// together).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/textsafe"
)

func main() {
	ns.MaybeRunHelper() // a re-execution as the namespace launcher never returns
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1
	exitRefused = 2
	// exitInconclusive: selfcheck could not tell (the host is too noisy),
	// or two builds' verdict is undecided where --fail-on looks.
	exitInconclusive = 3
	// exitSamplesFailed: the run went to its end but some samples could
	// not be measured; a confirmed regression (exit 1) wins over it.
	exitSamplesFailed = 4
	exitInterrupted   = 130
)

// inconclusiveError is a verdict that could not be reached (exit 3).
type inconclusiveError struct{ msg string }

func (e inconclusiveError) Error() string { return e.msg }

// samplesFailedError is a complete run with failed samples (exit 4).
type samplesFailedError struct{ msg string }

func (e samplesFailedError) Error() string { return e.msg }

// refusedError marks input or preflight refusals (exit 2).
type refusedError struct{ err error }

func (e refusedError) Error() string { return e.err.Error() }
func (e refusedError) Unwrap() error { return e.err }

func refuse(err error) error { return refusedError{err} }

// run is the whole command as a function of its arguments and outputs.
// The first SIGINT/SIGTERM cancels the context and teardown unwinds; a
// second one exits at once and leaves the rest to `twnsbench clean`.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// A closed stdout or stderr (`twnsbench run | head`) must not kill the
	// harness before its teardown: writes then fail with EPIPE instead.
	signal.Ignore(syscall.SIGPIPE)
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		fmt.Fprintf(stderr, "twnsbench: %v: stopping, tearing down (again to force)\n", s)
		cancel()
		if _, ok := <-sigs; ok {
			fmt.Fprintln(stderr, "twnsbench: forced exit; run `sudo twnsbench clean` to remove what is left")
			os.Exit(exitInterrupted)
		}
	}()

	app := newApp(stdout, stderr)
	err := app.RunContext(ctx, args)
	code := exitCode(err)
	switch code {
	case exitOK:
	case exitInterrupted:
		fmt.Fprintf(stderr, "twnsbench: %v\n", err)
	default:
		fmt.Fprintf(stderr, "twnsbench: %v\n", oneLine(err))
	}
	return code
}

// exitCode is the exit code of a command's error.
func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case errors.As(err, new(refusedError)):
		return exitRefused
	case errors.As(err, new(inconclusiveError)):
		return exitInconclusive
	case errors.As(err, new(samplesFailedError)):
		return exitSamplesFailed
	}
	return exitFailed
}

func newApp(stdout, stderr io.Writer) *cli.App {
	usageError := func(_ *cli.Context, err error, _ bool) error { return refuse(err) }
	app := &cli.App{
		Name:  "twnsbench",
		Usage: "benchmark tunnel transports in network namespaces, on one Linux host or across several (--host)",
		Description: "twnsbench builds client, relay and server network namespaces, on one host joined by veth\n" +
			"pairs through a bridge, or with --host each on its own machine's interface, reached over SSH.\n" +
			"It measures every transport the same way, by default with " + instrumentList(instrument.All()) + ", " + instrument.Ready + ",\n" +
			"on the LAN and under WAN conditions, and writes the results as JSON, a Markdown report, an HTML\n" +
			"page and SVG charts. run, rerun, selfcheck, doctor and clean need root; report, compare and\n" +
			"history only read results. Everything a run creates is named twnsb-<run id> and removed when it ends.",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		// Errors are printed once, by run, as one line.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: append([]*cli.Command{
			runCommand(),
			doctorCommand(),
			cleanCommand(),
			reportCommand(),
			compareCommand(),
			historyCommand(),
			selfcheckCommand(),
			rerunCommand(),
			wgUserspaceCommand(),
			forwarderCommand(),
			probeCommand(),
			agentCommand(),
		}, ownServerCommands()...),
		OnUsageError: usageError,
		// --version: the build's version, commit and Go (runtime/debug).
		Version: nsbench.ReadProvenance().Version,
	}
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprint(c.App.Writer, nsbench.ReadProvenance().Long()) }
	for _, c := range app.Commands {
		c.OnUsageError = usageError
	}
	return app
}

// oneLine joins a multi-line error into one line, with its control
// characters quoted: an error may carry a results file's or a host's text.
func oneLine(err error) string {
	return textsafe.Quote(strings.ReplaceAll(err.Error(), "\n", "; "))
}
