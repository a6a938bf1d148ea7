package main

import (
	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// twFlags are run's --tw, --caddy and --xray: the programs of the tw
// transport. Missing ones make the tw row "skipped: …" with how to get
// them; the run goes on with the other transports.
func twFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "tw", Usage: "tw binary for the tw transport (default: tw on PATH); build it from Tunnel Whisperer's source", TakesFile: true},
		&cli.StringFlag{Name: "caddy", Usage: "Caddy ≥ 2.8 for the tw relay (default: caddy on PATH); see scripts/install-relay-tools.sh", TakesFile: true},
		&cli.StringFlag{Name: "xray", Usage: "Xray for the tw relay (default: xray on PATH); see scripts/install-relay-tools.sh", TakesFile: true},
	}
}

// setTWBinaries gives the selected tw transport the flags' paths.
func setTWBinaries(c *cli.Context, ts []transport.Transport) {
	for _, t := range ts {
		if tw, ok := t.(*transport.TW); ok {
			tw.Bin, tw.Caddy, tw.Xray = c.String("tw"), c.String("caddy"), c.String("xray")
		}
	}
}
