package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/wg"
)

// wgUserspaceCommand is the hidden `twnsbench wg-userspace IFNAME`: the
// userspace WireGuard daemon (wireguard-go, built in). `run` starts it
// through the namespace launcher, so it runs in the foreground inside its
// role's namespace and cgroup; SIGTERM stops it and it removes its socket.
func wgUserspaceCommand() *cli.Command {
	return &cli.Command{
		Name:      wg.UserspaceCommand,
		Hidden:    true,
		Usage:     "run wireguard-go for IFNAME in the foreground, in the current network namespace",
		ArgsUsage: "IFNAME",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return refuse(errors.New(wg.UserspaceCommand + ": want exactly one interface name"))
			}
			return wg.ServeUserspace(c.Context, c.Args().First())
		},
	}
}
