package main

import (
	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
)

// networkFlags are run's flags for how the roles' network stacks are set
// and which CPUs run them (nsbench.Network); congestion is the default
// algorithm.
func networkFlags(congestion string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "congestion", Value: congestion, Usage: "TCP congestion control in every namespace: cubic (Linux's default, the reference's), bbr, or host (inherit)"},
		&cli.StringFlag{Name: "nic", Usage: "the role interfaces' settings: reference (tso/gso/gro off and gso_max_segs 1, the reference's: every packet crosses as itself) or own (as the kernel and driver set them: what the machines can do); default: reference on one host, own with --host"},
		&cli.StringFlag{Name: "pin", Usage: "keep every process a role starts (daemons, tunnels, tools, their threads and children) on fixed CPUs: off (the default: where the scheduler puts them), same (every role on the run's first CPU) or split (the client on the first, the server and the relay on the second); not with --clients or --host yet"},
	}
}

// networkOptions reads the network flags.
func networkOptions(c *cli.Context) nsbench.Network {
	return nsbench.Network{Congestion: c.String("congestion"), NIC: c.String("nic"), Pin: c.String("pin")}
}
