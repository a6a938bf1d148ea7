package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check this host for what a run needs (root, kernel features, tools, memory); changes nothing",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "size", Value: "5GiB", Usage: "payload size to check tmpfs room for"},
		},
		Action: func(c *cli.Context) error {
			size, err := nsbench.ParseSize(c.String("size"))
			if err != nil {
				return refuse(fmt.Errorf("--size: %w", err))
			}
			o := nsbench.Defaults()
			o.SizeBytes = size
			rep := preflight.Run(preflight.Options{NeedTmpfsBytes: o.SizeBytes + o.WarmBytes(), SizeBytes: o.SizeBytes, Tools: tools})
			fmt.Fprint(c.App.Writer, rep.String())
			if err := rep.Err(); err != nil {
				return refuse(err)
			}
			return nil
		},
	}
}
