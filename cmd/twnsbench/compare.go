package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench/compare"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "compare two results files: medians, change and significance per cell",
		ArgsUsage: "OLD.json NEW.json",
		Description: "For every transport × condition × instrument in both files: the old and new medians,\n" +
			"the change in %, and a two-sided Mann-Whitney U test; its p-values are adjusted for the number\n" +
			"of rows (Benjamini–Hochberg, q) and a change is significant when q < 0.05 (\"~\": no significant\n" +
			"change); the output says how many rows chance alone would put below p = 0.05. Refuses results\n" +
			"whose environments differ (kernel, CPU, congestion control, impairment, WAN, offloads,\n" +
			"WireGuard implementation, duration, warm-up, order, payloads, scp form and what scp's MB/s\n" +
			"divides the payload by: the copy's own time, or the whole wall as older documents do) unless --force.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "force", Usage: "compare even when the environments differ"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return refuse(fmt.Errorf("compare: want OLD.json NEW.json, got %d arguments", c.NArg()))
			}
			old, err := results.Read(c.Args().Get(0))
			if err != nil {
				return refuse(err)
			}
			cur, err := results.Read(c.Args().Get(1))
			if err != nil {
				return refuse(err)
			}
			for i, d := range []*results.Document{old, cur} {
				if r := d.IncompleteReason(); r != "" {
					fmt.Fprintf(c.App.ErrWriter, "twnsbench: warning: %s is an incomplete run (%s): its cells hold only the samples measured before it stopped\n", c.Args().Get(i), r)
				}
			}
			if diffs := compare.EnvDiffs(old, cur); len(diffs) > 0 {
				if !c.Bool("force") {
					return refuse(fmt.Errorf("compare: environments differ (%s); --force to compare anyway", strings.Join(diffs, "; ")))
				}
				fmt.Fprintf(c.App.Writer, "environments differ: %s\n\n", strings.Join(diffs, "; "))
			}
			rows := compare.Rows(old, cur)
			if len(rows) == 0 {
				return refuse(fmt.Errorf("compare: the two files have no cell in common"))
			}
			return compare.Write(c.App.Writer, rows)
		},
	}
}
