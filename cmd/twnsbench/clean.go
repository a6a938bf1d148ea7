package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
)

func cleanCommand() *cli.Command {
	return &cli.Command{
		Name:  "clean",
		Usage: "remove what killed runs left behind (namespaces, processes, cgroups, mounts, files named twnsb-*)",
		Description: "Removes only things named with twnsbench's prefix. Runs whose harness is still alive\n" +
			"are left alone unless --force is given. With --host or --hosts, cleans each named host instead,\n" +
			"through a copy of this binary started there as root as its agent (removed afterwards).",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "force", Usage: "also remove runs whose harness process is still alive"},
		}, hostFlags(checkHostUsage)...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return refuse(fmt.Errorf("clean: unexpected argument %q (clean takes no arguments)", c.Args().First()))
			}
			inv, cfg, remoteHosts, err := parseHosts(c)
			if err != nil {
				return refuse(err)
			}
			if remoteHosts {
				// A copy of this binary, each host's agent, cleans there.
				return cleanHosts(c.Context, c.App.Writer, inv, cfg, c.Bool("force"))
			}
			rep, err := nsbench.Clean(c.Context, c.Bool("force"))
			for _, line := range cleanLines(rep) {
				fmt.Fprintln(c.App.Writer, line)
			}
			return err
		},
	}
}

// cleanLines are what clean says it did, one line each.
func cleanLines(rep nsbench.CleanReport) []string {
	var lines []string
	for _, r := range rep.Removed {
		lines = append(lines, "removed "+r)
	}
	for _, l := range rep.Live {
		lines = append(lines, "left alone (still running): "+l)
	}
	for _, f := range rep.Foreign {
		lines = append(lines, "left alone: "+f)
	}
	if len(lines) == 0 {
		lines = append(lines, "nothing to clean")
	}
	return lines
}
