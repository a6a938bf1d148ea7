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
			"through a copy of this binary run there as root (removed afterwards).",
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
				// A copy of this binary runs `clean` on each host, as root.
				return cleanHosts(c.Context, c.App.Writer, inv, cfg, c.Bool("force"))
			}
			rep, err := nsbench.Clean(c.Context, c.Bool("force"))
			for _, r := range rep.Removed {
				fmt.Fprintf(c.App.Writer, "removed %s\n", r)
			}
			for _, l := range rep.Live {
				fmt.Fprintf(c.App.Writer, "left alone (still running): %s\n", l)
			}
			for _, f := range rep.Foreign {
				fmt.Fprintf(c.App.Writer, "left alone: %s\n", f)
			}
			if len(rep.Removed) == 0 && len(rep.Live) == 0 && len(rep.Foreign) == 0 {
				fmt.Fprintln(c.App.Writer, "nothing to clean")
			}
			return err
		},
	}
}
