package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench/compare"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/textsafe"
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
			"divides the payload by: the copy's own time, or the whole wall as older documents do) unless --force.\n" +
			"Two many-client sweeps (" + results.ClientsFileName + ", run --clients) compare per transport and client\n" +
			"count: the aggregate and Jain's fairness, one figure per run of the sweep. A sweep's clients are not\n" +
			"repeats of it: a change is tested over the sweep's runs (run --clients --runs, 3 or more a side), and\n" +
			"with fewer shown, not tested; their environments are the kernel, CPU, cores and duration. A sweep and a\n" +
			"run's results are refused.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "force", Usage: "compare even when the environments differ"},
		},
		Action: func(c *cli.Context) (err error) {
			defer refuseOnPanic(&err, "compare")
			if c.NArg() != 2 {
				return refuse(fmt.Errorf("compare: want OLD.json NEW.json, got %d arguments", c.NArg()))
			}
			old, oldSweep, err := readComparable(c.Args().Get(0))
			if err != nil {
				return refuse(err)
			}
			cur, curSweep, err := readComparable(c.Args().Get(1))
			if err != nil {
				return refuse(err)
			}
			if (oldSweep == nil) != (curSweep == nil) {
				return refuse(fmt.Errorf("compare: %s is %s and %s %s: compare two of a kind", c.Args().Get(0), kindOf(oldSweep),
					c.Args().Get(1), kindOf(curSweep)))
			}
			if oldSweep != nil {
				return compareClients(c, oldSweep, curSweep)
			}
			for i, d := range []*results.Document{old, cur} {
				if r := d.IncompleteReason(); r != "" {
					fmt.Fprintf(c.App.ErrWriter, "twnsbench: warning: %s is an incomplete run (%s): its cells hold only the samples measured before it stopped\n", c.Args().Get(i), textsafe.Quote(r))
				}
			}
			if err := allowEnvDiffs(c, compare.EnvDiffs(old, cur)); err != nil {
				return err
			}
			rows := compare.Rows(old, cur)
			if len(rows) == 0 {
				return refuse(fmt.Errorf("compare: the two files have no cell in common"))
			}
			return compare.Write(c.App.Writer, rows)
		},
	}
}

// readComparable reads path as a run's results or, when it is one, a
// many-client sweep's (the sweep non-nil).
func readComparable(path string) (*results.Document, *results.Clients, error) {
	d, err := results.Read(path)
	if errors.Is(err, results.ErrClients) {
		c, err := results.ReadClients(path)
		if err != nil {
			return nil, nil, fmt.Errorf("compare: %w", err)
		}
		return nil, c, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("compare: %w", err)
	}
	return d, nil, nil
}

func kindOf(c *results.Clients) string {
	if c != nil {
		return "a many-client sweep"
	}
	return "a run's results"
}

// allowEnvDiffs refuses to compare runs of different environments unless
// --force is given, and then says what differs.
func allowEnvDiffs(c *cli.Context, diffs []string) error {
	if len(diffs) == 0 {
		return nil
	}
	if !c.Bool("force") {
		return refuse(fmt.Errorf("compare: environments differ (%s); --force to compare anyway", strings.Join(diffs, "; ")))
	}
	fmt.Fprintf(c.App.Writer, "environments differ: %s\n\n", strings.Join(diffs, "; "))
	return nil
}

// compareClients is compare on two many-client sweeps.
func compareClients(c *cli.Context, old, cur *results.Clients) error {
	for i, s := range []*results.Clients{old, cur} {
		if !s.Complete {
			fmt.Fprintf(c.App.ErrWriter, "twnsbench: warning: %s is an incomplete sweep (%s): it holds only the counts measured before it stopped\n", c.Args().Get(i), textsafe.Quote(s.Incomplete))
		}
	}
	if err := allowEnvDiffs(c, compare.ClientsEnvDiffs(old, cur)); err != nil {
		return err
	}
	rows := compare.ClientsRows(old, cur)
	if len(rows) == 0 {
		return refuse(errors.New("compare: the two sweeps measured no transport at a client count in common"))
	}
	return compare.WriteClients(c.App.Writer, rows)
}
