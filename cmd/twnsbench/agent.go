package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
)

// agentCommand is the hidden `twnsbench agent SCOPE`: the copy of
// twnsbench on a role's host, started by the orchestrator over SSH (or by
// a test), serving requests on stdin and answering on stdout, which carry
// nothing else. It removes what it built when stdin ends or goes quiet.
func agentCommand() *cli.Command {
	return &cli.Command{
		Name:      "agent",
		Hidden:    true,
		Usage:     "serve a run's role on this host over stdin/stdout (started by the orchestrator)",
		ArgsUsage: "SCOPE",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "idle", Usage: "give up after this long without a request (default: 5 pings)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return refuse(fmt.Errorf("agent: want one SCOPE argument, got %d", c.NArg()))
			}
			return nsbench.ServeAgent(c.Context, c.Args().First(), c.Duration("idle"), os.Stdin, os.Stdout)
		},
	}
}
