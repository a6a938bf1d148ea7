package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/manyrr"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/recovery"
	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/rpm"
)

// impairmentFlag, seedFlag and strictFlag are run's flags for the WAN
// condition, beside --wan.
func impairmentFlag() cli.Flag {
	return &cli.StringFlag{Name: "impairment", Value: nsbench.ImpairmentAuto,
		Usage: "how the WAN condition is made: auto (netem when the kernel has sch_netem, else userspace), netem, or userspace (twnsbench's forwarder in the switch namespace)"}
}

func seedFlag() cli.Flag {
	return &cli.StringFlag{Name: "seed",
		Usage: "seed of the userspace impairment's loss sequence (default: drawn per run and recorded); every transport of a run meets the same drop positions"}
}

func strictFlag() cli.Flag {
	return &cli.BoolFlag{Name: "strict",
		Usage: "fail the run (exit 1) when a WAN cell's measured RTT or loss is off the configured condition; without it a warning is printed"}
}

// wanOptions reads the WAN flags into o.
func wanOptions(c *cli.Context, o *nsbench.Options) error {
	o.Impairment = c.String("impairment")
	o.Strict = c.Bool("strict")
	if c.IsSet("seed") {
		seed, err := strconv.ParseUint(c.String("seed"), 10, 64)
		if err != nil {
			return fmt.Errorf("--seed %q: want a whole number from 0 to 18446744073709551615", c.String("seed"))
		}
		o.Seed = &seed
	}
	return nil
}

// checkImpairment refuses --impairment netem on a kernel without netem,
// before anything is created.
func checkImpairment(plan *nsbench.Plan) error {
	if len(plan.WANs) == 0 || plan.Impairment != nsbench.ImpairmentNetem {
		return nil
	}
	if ok, how := preflight.KernelFeature("netem"); !ok {
		return fmt.Errorf("--impairment netem: this kernel has no netem (%s); use --impairment userspace or auto", how)
	}
	return nil
}

// verificationOutcome reports WAN cells that failed verification: an error
// with --strict, a warning line otherwise.
func verificationOutcome(c *cli.Context, plan *nsbench.Plan, res *nsbench.Result) error {
	if res == nil || res.Unverified == 0 {
		return nil
	}
	var specs []string
	for _, w := range plan.WANs {
		specs = append(specs, w.String())
	}
	what, file := "WAN cell(s)", nsbench.ReportFile
	if plan.Sweep() {
		what, file = "WAN row(s) of the sweep", report.ClientsReportFile
	}
	msg := fmt.Sprintf("%d %s failed verification: what was measured is off the configured %s (see the Verification section of %s)",
		res.Unverified, what, strings.Join(specs, " / "), file)
	if plan.Strict {
		return fmt.Errorf("%s", msg)
	}
	fmt.Fprintf(c.App.ErrWriter, "twnsbench: warning: %s; --strict makes this fail the run\n", msg)
	return nil
}

// forwarderCommand is the hidden `twnsbench impair-forwarder --spec JSON`:
// the userspace impairment's forwarder. `run` starts it through the
// namespace launcher in the switch namespace, in its own cgroup, as the
// harness's child; SIGTERM stops it.
func forwarderCommand() *cli.Command {
	return hiddenCommand(impair.ForwarderArg, impair.ForwarderMain,
		"run the userspace impairment's forwarder in the foreground, in the current network namespace")
}

// probeCommand is the hidden `twnsbench impair-probe [--listen host:port]`:
// an end of the WAN probes (the listener in the server role, the loss
// probe's sender in the client role). `run` starts it through the namespace
// launcher in its role; SIGTERM stops it.
func probeCommand() *cli.Command {
	return hiddenCommand(impair.ProbeArg, impair.ProbeMain,
		"run an end of the WAN probes in the foreground, in the current network namespace")
}

// ownServerCommands are the hidden `twnsbench many-rr-server --listen
// HOST:PORT` and `twnsbench rpm-server --listen HOST:PORT` (server
// fixtures) and their clients `twnsbench many-rr-client …` and
// `twnsbench rpm-client …` (the many_rr and rpm instruments').
func ownServerCommands() []*cli.Command {
	return []*cli.Command{
		hiddenCommand(manyrr.ServerArg, manyrr.ServerMain, "answer the many-connections request/response test in the foreground"),
		hiddenCommand(manyrr.ClientArg, manyrr.ClientMain, "run the many-connections request/response test's client and print its report as JSON"),
		hiddenCommand(recovery.ClientArg, recovery.ClientMain, "probe the tunnel with a request every 10 ms and print the timeline as JSON"),
		hiddenCommand(rpm.ServerArg, rpm.ServerMain, "serve the Responsiveness Test (HTTP/2 over TLS 1.3) in the foreground"),
		hiddenCommand(rpm.ClientArg, rpm.ClientMain, "run the Responsiveness Test's client and print its report as JSON"),
	}
}

// hiddenCommand is a hidden subcommand that hands its arguments to main
// unparsed: a part of a run that twnsbench starts as its own child.
func hiddenCommand(name string, main func(context.Context, []string, io.Writer) error, usage string) *cli.Command {
	return &cli.Command{
		Name:            name,
		Hidden:          true,
		Usage:           usage,
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			return main(c.Context, c.Args().Slice(), c.App.Writer)
		},
	}
}
