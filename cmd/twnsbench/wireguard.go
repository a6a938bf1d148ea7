package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench/transport"
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

// wireguardFlag is run's --wireguard.
func wireguardFlag() cli.Flag {
	return &cli.StringFlag{
		Name:  "wireguard",
		Value: string(wg.Auto),
		Usage: "WireGuard implementation: auto (the kernel's when it has WireGuard, else wireguard-go), kernel, or userspace (wireguard-go, built into twnsbench)",
	}
}

// setWireGuardMode gives the selected WireGuard transport the --wireguard
// mode and resolves its implementation, so that `--wireguard kernel` on a
// kernel without WireGuard is refused before anything is created.
func setWireGuardMode(c *cli.Context, ts []transport.Transport) error {
	mode, err := wg.ParseMode(c.String("wireguard"))
	if err != nil {
		return err
	}
	for _, t := range ts {
		if w, ok := t.(*transport.WireGuard); ok {
			w.Mode = mode
			if _, err := w.Resolve(); err != nil {
				return err
			}
		}
	}
	return nil
}
