package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/transport"
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
			writeTransports(c.App.Writer)
			if err := rep.Err(); err != nil {
				return refuse(err)
			}
			return nil
		},
	}
}

// writeTransports lists every registered transport with its default
// options: whether it can run here, and if not why and how to fix it. A
// transport that cannot run fails nothing: a run skips it, or refuses it
// when it is named.
func writeTransports(w io.Writer) {
	for _, s := range transport.Registered() {
		status, detail := "ok", s.Summary
		ts, err := transport.Build([]string{s.Name}, nil)
		if err == nil {
			err = ts[0].Check()
		}
		if err != nil {
			status, detail = "cannot", err.Error()
		}
		fmt.Fprintf(w, "%-9s %-27s %s\n", status, "transport "+s.Name, detail)
	}
}
